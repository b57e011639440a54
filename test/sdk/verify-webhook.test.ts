// The SDK's verifyWebhook against signatures made by the `standardwebhooks` library (not by
// Dossier's own code): what verifies, and every way a delivery is refused.
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyWebhook, WebhookVerificationError } from "../../sdk/index.js";

const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const other = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const body = JSON.stringify({ type: "RUN_SUCCEEDED", timestamp: "2026-12-02T20:00:00.000Z", data: { runId: "UnVuOjE=", summary: "the run succeeded" } });

function signed(by: string, at = new Date(), id = "msg_1") {
  return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(by).sign(id, at, body) };
}

describe("verifyWebhook", () => {
  it("returns the event of a delivery standardwebhooks signed, from Node's headers or a Headers object", async () => {
    await expect(verifyWebhook(body, signed(secret), secret)).resolves.toEqual(JSON.parse(body));
    await expect(verifyWebhook(new TextEncoder().encode(body), new Headers(signed(secret)), secret)).resolves.toMatchObject({ type: "RUN_SUCCEEDED" });
  });

  it("accepts any of several secrets and any of several signatures (a rotation)", async () => {
    await expect(verifyWebhook(body, signed(secret), [other, secret])).resolves.toMatchObject({ type: "RUN_SUCCEEDED" });
    const both = { ...signed(secret), "webhook-signature": `${signed(other)["webhook-signature"]} ${signed(secret)["webhook-signature"]}` };
    await expect(verifyWebhook(body, both, secret)).resolves.toMatchObject({ type: "RUN_SUCCEEDED" });
    await expect(verifyWebhook(body, both, other)).resolves.toMatchObject({ type: "RUN_SUCCEEDED" });
  });

  it("refuses a wrong secret, an altered body or id, a stale timestamp and missing headers", async () => {
    const refused = (promise: Promise<unknown>, message: RegExp) =>
      expect(promise).rejects.toThrow(expect.objectContaining({ name: "WebhookVerificationError", message: expect.stringMatching(message) }));
    await refused(verifyWebhook(body, signed(secret), other), /no signature matches/);
    await refused(verifyWebhook(body.replace("succeeded", "failed"), signed(secret), secret), /no signature matches/);
    await refused(verifyWebhook(body, { ...signed(secret), "webhook-id": "msg_2" }, secret), /no signature matches/);
    const old = new Date(Date.now() - 600_000);
    await refused(verifyWebhook(body, signed(secret, old), secret), /outside the tolerance/);
    await expect(verifyWebhook(body, signed(secret, old), secret, { toleranceSeconds: 900 })).resolves.toMatchObject({ type: "RUN_SUCCEEDED" });
    await refused(verifyWebhook(body, { "webhook-id": "msg_1" }, secret), /missing/);
    // Only v1 signatures count.
    const v2 = { ...signed(secret), "webhook-signature": signed(secret)["webhook-signature"].replace("v1,", "v2,") };
    await refused(verifyWebhook(body, v2, secret), /no signature matches/);
    expect(new WebhookVerificationError("x")).toBeInstanceOf(Error);
  });
});
