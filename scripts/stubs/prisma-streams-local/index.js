// Prisma's CLI imports the real package only to run `prisma dev` (a local Prisma Postgres), and
// every version of it requires Node.js 22. Dossier runs its own embedded database and never runs
// `prisma dev`; this stand-in keeps npm from installing it and says so if anything tries.
throw new Error("@prisma/streams-local is not installed: Dossier does not support `prisma dev` (see README, For developers).");
