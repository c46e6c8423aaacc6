/**
 * The behaviour matrix (README.md) for Anthropic Messages, over recorded transcripts in
 * `fixtures/anthropic/` served by a fake provider on 127.0.0.1.
 */
import { registerBehaviourMatrix } from "./testing/behaviours.ts";
import { ANTHROPIC } from "./testing/provider-specs.ts";

registerBehaviourMatrix(ANTHROPIC);
