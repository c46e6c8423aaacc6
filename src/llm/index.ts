export {
  type CallAmount,
  createUsageMeter,
  estimateInputTokens,
  toReservation,
} from "./call-estimate.ts";
export {
  CHARS_PER_TOKEN,
  type ModelCompaction,
  type ModelCompactionInput,
} from "./compaction-config.ts";
export {
  API_KINDS,
  type ApiKeySource,
  type ApiKind,
  ConfigError,
  createModelConfig,
  createModelConfigs,
  type InputModality,
  type ModelConfig,
  type ModelConfigInput,
  type ModelPrices,
  THINKING_LEVELS,
  type ThinkingLevel,
} from "./config.ts";
export { isContextOverflow } from "./context-overflow.ts";
export { DEFAULT_DEMO_HELP, DEMO_MODEL_NAME, type DemoOptions } from "./demo.ts";
export { type ErrorMessageFields, toErrorMessage } from "./error-message.ts";
export { hashBody } from "./exact-fetch.ts";
export { COOLING_DOWN_PREFIX, toFailureKind } from "./failure-kind.ts";
export {
  type Admission,
  type AdmissionRequest,
  type AdmitCall,
  BUDGET_REACHED_PREFIX,
  GATE_PROVIDER,
  gateLLM,
  isBudgetRefusal,
} from "./gated-llm.ts";
export {
  type CreateLLMOptions,
  createLLM,
  type LLM,
  type ModelInfo,
  toPromptCacheKey,
} from "./llm.ts";
export {
  DEFAULT_HEALTH_POLICY,
  type HealthPolicy,
  type HealthState,
  type ModelHealthInfo,
} from "./model-health.ts";
export {
  applyModelOptions,
  type Effort,
  type ModelOptionSupport,
  type ModelOptions,
  toModelOptionSupport,
} from "./model-options.ts";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.ts";
export { createSecret, redactSecret, type Secret } from "./secret.ts";
export type * from "./types.ts";
export { withGetters } from "./with-getters.ts";
export { withMethods } from "./with-methods.ts";
