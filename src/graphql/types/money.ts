// Exact amounts of money (issue 40): the Decimal scalar, a decimal string on the wire, and Money.
import { GraphQLError, Kind } from "graphql";
import { COST_CURRENCY, type DecimalInput, toDecimal } from "../../domain/costs/pricing.js";
import { builder } from "../builder.js";

builder.scalarType("Decimal", {
  description:
    'An exact decimal number, a string on the wire (e.g. "2.50" or "0.0475"), never a floating-point number: parse it with a decimal library. Outputs carry no exponent and no trailing zeros. Inputs are decimal strings (a JSON number is taken too); the field that takes one says what it accepts.',
  serialize: (value) => (typeof value === "string" ? value : String(value)),
  parseValue: (value) => {
    if (typeof value === "string" || typeof value === "number") return String(value);
    throw new GraphQLError('A Decimal is a string such as "2.50".');
  },
  parseLiteral: (ast) => {
    if (ast.kind === Kind.STRING || ast.kind === Kind.INT || ast.kind === Kind.FLOAT) return ast.value;
    throw new GraphQLError('A Decimal is a string such as "2.50".');
  },
});

/** A decimal as the Decimal scalar shows it. */
export const decimalString = (value: DecimalInput): string => toDecimal(value).toFixed();

export const MoneyRef = builder.objectRef<{ amount: DecimalInput }>("Money").implement({
  description: "An amount of money, exact.",
  fields: (t) => ({
    amount: t.field({ type: "Decimal", resolve: (money) => decimalString(money.amount) }),
    currency: t.string({ description: `The ISO 4217 code of the currency: always ${COST_CURRENCY}.`, resolve: () => COST_CURRENCY }),
  }),
});

/** Money in USD. */
export const usd = (amount: DecimalInput) => ({ amount });
