-- AlterTable
ALTER TABLE "principal" ADD COLUMN     "sign_in_subject" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "principal_sign_in_subject_key" ON "principal"("sign_in_subject");
