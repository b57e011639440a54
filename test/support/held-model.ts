// A model server for lease tests: its first `holding` requests stream one piece and then wait
// until released (the run stays in its model request, its lease renewed meanwhile); any later
// request — another attempt resuming the run — answers at once.
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { startOpenAIStreamStub } from "./openai-stream-stub.js";

export type HeldModel = {
  model: OpenAIModel;
  /** How many requests the server was sent. */
  asked(): number;
  /** Lets the held requests finish. Close it before the app: a request still held holds up its close. */
  release(): void;
  close(): Promise<void>;
};

export async function startHeldModel({
  holding = Number.POSITIVE_INFINITY,
  later = ["Resumed."],
}: {
  holding?: number;
  later?: string[];
} = {}): Promise<HeldModel> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let asked = 0;
  const stub = await startOpenAIStreamStub(() => {
    asked += 1;
    return asked <= holding ? { text: ["Held ", "until released."], pause: { index: 1, until: released } } : { text: later };
  });
  return {
    model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 }),
    asked: () => asked,
    release,
    close: () => stub.close(),
  };
}
