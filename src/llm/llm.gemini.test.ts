/**
 * The behaviour matrix (README.md) for Google Gemini (streamGenerateContent?alt=sse), over recorded transcripts in
 * `fixtures/gemini/` served by a fake provider on 127.0.0.1.
 */
import { registerBehaviourMatrix } from "./testing/behaviours.ts";
import { GEMINI } from "./testing/provider-specs.ts";

registerBehaviourMatrix(GEMINI);
