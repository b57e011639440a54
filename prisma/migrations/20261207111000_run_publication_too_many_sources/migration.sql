-- A run whose answer was built on more versions than a publication may name as its sources is not published:
-- the answer stays the run's, and the run records why (runtime/workspace/run-results.ts).
-- AlterEnum
ALTER TYPE "RunPublicationOutcome" ADD VALUE 'TOO_MANY_SOURCES';
