/**
 * The behaviour matrix (README.md) for an OpenAI-compatible endpoint (the DeepSeek dialect), over recorded transcripts in
 * `fixtures/openai-compatible/` served by a fake provider on 127.0.0.1.
 */
import { registerBehaviourMatrix } from "./testing/behaviours.ts";
import { OPENAI_COMPATIBLE } from "./testing/provider-specs.ts";

registerBehaviourMatrix(OPENAI_COMPATIBLE);
