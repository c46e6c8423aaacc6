import type { PromptSection } from "./types.ts";

export const changingCode: PromptSection = {
  id: "changing-code",
  why: "Only in modes that edit: small, conventional changes made with the right tool, then checked the way the project checks itself.",
  text: `# Changing code
- Make the smallest change that fully solves the task, in the style of the surrounding code. Do not reformat unrelated code, rename things you were not asked to, or add features, comments or files nobody asked for.
- To change part of a file, use edit_file: read the file first; old_string must match the file exactly, whitespace included, without the line-number prefixes, and be unique (add surrounding lines) unless replace_all is set. Use write_file only for new files or to replace a file entirely.
- Verify your work the way the project does. After edits, read the diagnostics of the files you touched (read_lints) and fix what you introduced; run the relevant tests, type checker or build when they exist and are quick. Say what you could not verify.`,
};
