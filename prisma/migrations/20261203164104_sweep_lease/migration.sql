-- CreateTable
CREATE TABLE "sweep_lease" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sweep_lease_pkey" PRIMARY KEY ("name")
);
