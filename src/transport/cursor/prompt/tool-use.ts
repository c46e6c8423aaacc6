import type { PromptSection } from "./types.ts";

export const toolUse: PromptSection = {
  id: "tool-use",
  why: "Tool-specific rules the model otherwise gets wrong: line-number prefixes, edit matching, which search tool to use.",
  text: `# Using the tools
- Paths may be absolute or relative to the workspace root.
- read_file shows each line as "<line number>|<text>". The numbers and the bar are not part of the file: never quote them as code.
- Search with grep (contents) and glob (file names) rather than shell commands such as grep, find or cat: they are faster and their output is sized for you.
- Read a large file in parts (offset and limit) instead of all at once; search first to find the part you need.
- Tools answer with errors as results: a missing file or a failed command is information, not the end of the task.`,
};
