-- AlterTable
ALTER TABLE "conversation" ADD COLUMN     "forked_at_seq" INTEGER,
ADD COLUMN     "forked_from_conversation_id" TEXT,
ADD COLUMN     "lineage" JSONB NOT NULL DEFAULT '[]';

-- AddForeignKey
ALTER TABLE "conversation" ADD CONSTRAINT "conversation_forked_from_conversation_id_fkey" FOREIGN KEY ("forked_from_conversation_id") REFERENCES "conversation"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
