// Deny by default: every root field of the schema has a rule saying what an API key needs (and
// whether an access token may use it). A field added without one would be refused to every key,
// so it is caught here first; a rule for a field the schema no longer has is caught too.
import { getNamedType, isUnionType } from "graphql";
import { describe, expect, it } from "vitest";
import { ForbiddenError } from "../../src/domain/errors.js";
import { ROOT_RULES } from "../../src/graphql/root-rules.js";
import { schema } from "../../src/graphql/schema.js";

const rootFields = (): string[] =>
  [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].flatMap((type) =>
    type ? Object.keys(type.getFields()).map((field) => `${type.name}.${field}`) : [],
  );

describe("root field rules", () => {
  it("names what an API key needs for every root field of the schema, and no other", () => {
    const fields = rootFields();
    expect(fields.length).toBeGreaterThan(60);
    expect(fields.filter((field) => !(field in ROOT_RULES))).toEqual([]);
    expect(Object.keys(ROOT_RULES).filter((field) => !fields.includes(field))).toEqual([]);
  });

  it("lets no access token use a key's or token's management, and keeps deciding and its configuration behind DECIDE", () => {
    for (const field of ["Mutation.createApiKey", "Mutation.revokeApiKey", "Mutation.createAccessToken", "Query.apiKeys", "Mutation.upsertMcpServer"]) {
      expect(ROOT_RULES[field]?.keysOnly).toBe(true);
    }
    for (const field of ["Mutation.decideToolCall", "Mutation.upsertMcpServer", "Mutation.deleteMcpServer", "Mutation.upsertSkill", "Mutation.deleteSkill"]) {
      expect(ROOT_RULES[field]?.operation).toBe("DECIDE");
    }
  });

  it("gives every mutation's payload a ForbiddenError, the answer to a key without the scope", () => {
    const mutations = Object.values(schema.getMutationType()!.getFields());
    const withoutForbidden = mutations
      .filter((field) => {
        const payload = getNamedType(field.type);
        return !isUnionType(payload) || !payload.getTypes().some((member) => member.name === ForbiddenError.name);
      })
      .map((field) => field.name);
    expect(withoutForbidden).toEqual([]);
  });
});
