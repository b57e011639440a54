// The webhooks' settings (config.ts reads them with the rest of the environment): the hosts inside
// the network a webhook may reach, the delays between its deliveries' attempts, and how long one
// attempt may take.
import type { Config } from "./config-types.js";
import { exactHosts, secondsList, whole } from "./config-rules.js";

export const webhookEnv = {
  // Named exactly, as MCP_HTTP_ALLOWED_HOSTS: a wildcard would let names someone outside controls lead inside the network.
  WEBHOOK_ALLOWED_HOSTS: exactHosts("hooks.internal.example,127.0.0.1:9000").default([]),
  WEBHOOK_RETRY_DELAYS_SECONDS: secondsList("5,300,1800,7200,18000,36000").optional(),
  WEBHOOK_TIMEOUT_MS: whole(500, "min").default(10_000),
};

type WebhookValues = { WEBHOOK_ALLOWED_HOSTS: string[]; WEBHOOK_RETRY_DELAYS_SECONDS?: number[]; WEBHOOK_TIMEOUT_MS: number };

export function webhooksOf(values: WebhookValues): Config["webhooks"] {
  return { allowedHosts: values.WEBHOOK_ALLOWED_HOSTS, retryDelaysSeconds: values.WEBHOOK_RETRY_DELAYS_SECONDS, timeoutMs: values.WEBHOOK_TIMEOUT_MS };
}
