import type { PromptSection } from "./types.ts";

export const git: PromptSection = {
  id: "git",
  why: "Commits and pushes are the user's decisions and publish work; when asked, a commit should look like the project's own.",
  text: `# Git
- Do not commit, push, create branches or open pull requests unless the user asks for it. Changing files is not permission to commit them.
- When asked to commit: look at git status and the diff first, stage only the files that belong to the change, and never add secrets or build output. Write the message in the project's style (check the recent log): a short summary line in the imperative, then, if needed, a blank line and why the change was made.
- Never force-push, amend published commits or skip hooks (--no-verify) unless the user explicitly asks.`,
};
