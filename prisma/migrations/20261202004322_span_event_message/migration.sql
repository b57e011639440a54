-- AlterTable
ALTER TABLE "span_event" ADD COLUMN     "message_id" TEXT;

-- AddForeignKey
ALTER TABLE "span_event" ADD CONSTRAINT "span_event_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
