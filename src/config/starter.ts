/**
 * The commented starter configuration `cursor-byok config init` writes. It is valid as written
 * (all defaults, models from environment shortcuts), and every commented model example is valid
 * once uncommented (starter.test.ts checks both).
 */

export interface StarterInputs {
  /** The platform's default data directory, shown as the commented default. */
  readonly dataDirectory: string;
}

export function toStarterConfig(inputs: StarterInputs): string {
  return `# cursor-byok configuration (YAML; lines starting with # are comments).
#
# After editing, check it:
#   cursor-byok doctor    # this file, your keys, the port and the database
#   cursor-byok models    # the models Cursor will see
#
# Keys: environment variables alone are enough to start. Each of
#   OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY
# makes that provider's well-known models available. The models listed under "models:"
# below come first, and the first model offered is the default one.

server:
  host: 127.0.0.1 # loopback: only this machine can connect
  port: 8765
  # Any other host (e.g. 0.0.0.0) needs an access token that every client sends as
  # "authorization: Bearer <token>". Name the variable holding it:
  # accessTokenEnv: CURSOR_BYOK_TOKEN
  # runSseContentType: event-stream # or "connect"
  # http2: false # true lets clients use the HTTP/2 bidi Run

# The Cursor IDE (\`cursor-byok ide setup\`): its HTTPS proxy listens on 127.0.0.1.
# ide:
#   proxyPort: 8766
#   allowConnectPorts: [443] # ports a CONNECT through the proxy may name

# Using a team's cursor-byok server instead of running the agent here (README "Running it for
# a team"): \`cursor-byok agent\` and the IDE proxy send your team token to it.
# team:
#   server: https://byok.example.com
#   tokenEnv: CURSOR_BYOK_TEAM_TOKEN # the variable holding your token

# data:
#   directory: ${inputs.dataDirectory} # the database is <directory>/cursor-byok.db

log:
  level: info # fatal, error, warn, info, debug, trace or silent

# Web tools the server runs itself. web_search is off until you choose a provider
# (brave, tavily, exa or jina with its key variable, or your own searxng with url:):
# web:
#   search:
#     provider: brave # key in BRAVE_API_KEY (or name another variable with apiKeyEnv)
#   askApproval: true # Cursor asks before each search or fetch
#   fetch:
#     allowHosts: [] # private hosts web_fetch may reach, e.g. [wiki.corp.example]

# envShortcuts: true # false: ignore OPENAI_API_KEY & co. and offer only the models below
# defaultModel: claude # the model Cursor picks by default (else the first one)
# helperModel: claude  # a small, cheap model for chat titles, commit messages and branch names (else the default)

models:
  # Each model: the name shown in Cursor, the API it speaks, the upstream model id, and where
  # its key comes from (apiKeyEnv: the name of an environment variable; preferred over apiKey).
  # Optional: provider, baseUrl, headers, thinking (off, minimal, low, medium, high, xhigh,
  # max), contextWindow, maxOutput, prices (USD per million tokens: input, output, cacheRead,
  # cacheWrite). Known models get their limits and prices from pi-ai's catalogue.
  #
  # Anthropic:
  # - name: claude
  #   api: anthropic
  #   model: claude-sonnet-5-5
  #   apiKeyEnv: ANTHROPIC_API_KEY
  #   thinking: high
  #
  # OpenAI (Responses API; "openai-chat" is Chat Completions):
  # - name: gpt
  #   api: openai-responses
  #   model: gpt-6.2-sol
  #   apiKeyEnv: OPENAI_API_KEY
  #
  # Gemini:
  # - name: gemini
  #   api: gemini
  #   model: gemini-3.1-pro-preview
  #   apiKeyEnv: GEMINI_API_KEY
  #
  # OpenRouter (any model id it lists):
  # - name: kimi
  #   api: openai-compatible
  #   provider: openrouter
  #   model: moonshotai/kimi-k2-thinking
  #   apiKeyEnv: OPENROUTER_API_KEY
  #
  # A local OpenAI-compatible server (Ollama here; LM Studio and vLLM work the same way):
  # - name: local-qwen
  #   api: openai-compatible
  #   provider: ollama
  #   baseUrl: http://127.0.0.1:11434/v1
  #   model: qwen3-coder:30b
  #   contextWindow: 65536
  #   maxOutput: 8192
  #
  # A gateway that needs extra headers and its own prices:
  # - name: team-gateway
  #   api: openai-chat
  #   baseUrl: https://llm-gateway.example.com/v1
  #   model: gpt-6.1-terra
  #   apiKeyEnv: TEAM_GATEWAY_KEY
  #   headers:
  #     X-Team: platform
  #   prices:
  #     input: 1
  #     output: 5
`;
}
