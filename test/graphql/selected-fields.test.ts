// Resolvers that leave a column unread when nothing selects it (a version's body, the workspace an
// admission gives back) ask selectsPath. It must see the selection as execution does: a field that
// @skip or @include leaves out is not selected, on the field itself or on the fragment around it.
import { graphql, GraphQLObjectType, GraphQLSchema, GraphQLString } from "graphql";
import { describe, expect, it } from "vitest";
import { selectsPath } from "../../src/graphql/selected-fields.js";

const Version = new GraphQLObjectType({ name: "Version", fields: { title: { type: GraphQLString }, content: { type: GraphQLString } } });

/** A schema whose `version` resolver records whether its selection reads `content`. */
function probe() {
  const seen: boolean[] = [];
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: "Query",
      fields: {
        version: {
          type: Version,
          resolve: (_root, _args, _ctx, info) => {
            seen.push(selectsPath(info, ["content"]));
            return { title: "t", content: "c" };
          },
        },
      },
    }),
  });
  return { seen, ask: (source: string, variableValues?: Record<string, unknown>) => graphql({ schema, source, variableValues }) };
}

describe("selectsPath", () => {
  it("follows @skip and @include with literals and variables, on fields, inline fragments and fragment spreads", async () => {
    const { seen, ask } = probe();
    const cases: [string, Record<string, unknown> | undefined, boolean][] = [
      ["{ version { title content } }", undefined, true],
      ["{ version { title content @skip(if: true) } }", undefined, false],
      ["{ version { title content @include(if: false) } }", undefined, false],
      ["query ($with: Boolean!) { version { title content @include(if: $with) } }", { with: false }, false],
      ["query ($with: Boolean!) { version { title content @include(if: $with) } }", { with: true }, true],
      ["query ($skip: Boolean!) { version { title ... @skip(if: $skip) { content } } }", { skip: true }, false],
      ["query ($skip: Boolean!) { version { title ...Body @skip(if: $skip) } } fragment Body on Version { content }", { skip: true }, false],
      ["query ($skip: Boolean!) { version { title ...Body @skip(if: $skip) } } fragment Body on Version { content }", { skip: false }, true],
      // Left out in one place, selected in another: execution reads it.
      ["{ version { content @skip(if: true) ... { content } } }", undefined, true],
    ];
    for (const [source, variables] of cases) expect((await ask(source, variables)).errors).toBeUndefined();
    expect(seen).toEqual(cases.map(([, , selected]) => selected));
  });
});
