// setModelPrice and modelPrices (issue 40): a principal's own prices, checked (a negative or
// malformed price is a ValidationError), listed with the operator's, and cost totals in Money.
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SET = parse(`mutation ($input: SetModelPriceInput!) {
  setModelPrice(input: $input) {
    __typename
    ... on SetModelPriceSuccess { modelPrice { model effectiveFrom operator inputPerMillion cachedInputPerMillion outputPerMillion reasoningPerMillion } }
    ... on ValidationError { message }
  }
}`);
const LIST = parse(`{ modelPrices { model operator inputPerMillion } viewer { cost { amount currency } } }`);

describe.each(backends)("model prices on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => t?.close());

  const request = (document: ReturnType<typeof parse>, variables: Record<string, unknown> = {}) => t.client.request(document as any, variables) as Promise<any>;

  it("sets the caller's own price, refuses negative and malformed prices, and lists them", async () => {
    const set = await request(SET, {
      input: { model: "my-endpoint", effectiveFrom: "2026-01-01T00:00:00Z", inputPerMillion: "2.50", cachedInputPerMillion: "1.25", outputPerMillion: "10" },
    });
    expect(set.setModelPrice).toEqual({
      __typename: "SetModelPriceSuccess",
      modelPrice: {
        model: "my-endpoint",
        effectiveFrom: "2026-01-01T00:00:00.000Z",
        operator: false,
        inputPerMillion: "2.5",
        cachedInputPerMillion: "1.25",
        outputPerMillion: "10",
        reasoningPerMillion: null,
      },
    });
    const negative = await request(SET, { input: { model: "m", inputPerMillion: "-1", outputPerMillion: "1" } });
    expect(negative.setModelPrice.__typename).toBe("ValidationError");
    expect(negative.setModelPrice.message).toContain("must not be negative");
    const malformed = await request(SET, { input: { model: "m", inputPerMillion: "1e3", outputPerMillion: "1.2.3" } });
    expect(malformed.setModelPrice.__typename).toBe("ValidationError");
    const listed = await request(LIST);
    expect(listed.modelPrices).toEqual([{ model: "my-endpoint", operator: false, inputPerMillion: "2.5" }]);
    expect(listed.viewer.cost).toEqual({ amount: "0", currency: "USD" });
  });
});
