-- CreateIndex
CREATE INDEX "webhook_message_webhook_id_status_next_attempt_at_id_idx" ON "webhook_message"("webhook_id", "status", "next_attempt_at", "id");

-- CreateIndex
CREATE INDEX "webhook_message_webhook_id_status_relayed_at_next_attempt_a_idx" ON "webhook_message"("webhook_id", "status", "relayed_at", "next_attempt_at", "id");
