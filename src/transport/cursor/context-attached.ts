/**
 * The attached context items beyond files and selections (SelectedContext 13-26): docs, past
 * chats, pull requests and their diffs, browser pages and elements, console logs, documents,
 * skills and subagents. Each becomes a supplement with a stable key (context.ts explains why);
 * an item the model cannot use here (a cloud docs index, another chat's content, a video) is
 * still named to the model, with what it would need, so nothing the user attached disappears.
 */
import type { ContextSupplement } from "../../loop/types.ts";
import { type BlobStore, findBlob } from "./blobs.ts";
import { tag } from "./context-tag.ts";
import type { RequestContext } from "./gen/agent/v1/request_context_pb.js";
import type { SelectedContext, SelectedDocument } from "./gen/agent/v1/user_message_pb.js";
import { truncateMiddle } from "./tools/text.ts";

const ITEM_LIMIT = 100_000;
const SMALL_LIMIT = 20_000;

/** Document types read as text; anything else is named but not shown. */
const TEXT_TYPES =
  /^(text\/|application\/(json|xml|yaml|x-yaml|toml|csv|javascript|x-sh|sql))|\+(json|xml)$/;

export function renderAttached(
  selected: SelectedContext,
  requestContext: RequestContext | undefined,
  blobs: BlobStore,
): ContextSupplement[] {
  const items: ContextSupplement[] = [];
  for (const docs of selected.documentations) {
    items.push({
      key: `docs:${docs.docId || docs.name}`,
      text: tag(
        "attached_docs",
        { name: docs.name },
        `The user referenced the documentation set "${docs.name}" (@Docs). Its pages live in ` +
          "Cursor's cloud index, which this server cannot search: use what you know, a web tool " +
          "if you have one, or ask the user for the relevant page.",
      ),
    });
  }
  for (const chat of selected.pastChats) {
    items.push({
      key: `past-chat:${chat.agentId}`,
      text: tag(
        "attached_past_chat",
        { name: chat.name, id: chat.agentId },
        `The user referenced an earlier chat, "${chat.name}". Its messages are not part of this ` +
          "request; if you need what was decided there, ask the user.",
      ),
    });
  }
  for (const pr of selected.selectedPullRequests) {
    const description = pr.description ?? textOfBlob(blobs, pr.blobId) ?? "";
    const parts = [
      `Pull request #${pr.number}${pr.title === undefined ? "" : `: ${pr.title}`}`,
      `URL: ${pr.url}`,
    ];
    if (pr.folderPath !== "") parts.push(`Repository folder: ${pr.folderPath}`);
    if (description.trim() !== "") parts.push(`Description:\n${description.trim()}`);
    if (pr.summaryJson !== undefined && pr.summaryJson !== "")
      parts.push(`Summary (JSON):\n${pr.summaryJson}`);
    items.push({
      key: `pr:${pr.url}`,
      text: tag(
        "attached_pull_request",
        { url: pr.url },
        truncateMiddle(parts.join("\n"), ITEM_LIMIT),
      ),
    });
  }
  for (const diff of selected.gitPrDiffSelections) {
    const lines = `${diff.startLine}-${diff.endLine}`;
    const content = diff.diffContent ?? textOfBlob(blobs, diff.blobId) ?? "";
    items.push({
      key: `pr-diff:${diff.prUrl}:${diff.filePath}:${lines}`,
      text: tag(
        "attached_pr_diff",
        { pr: diff.prUrl, path: diff.filePath, lines },
        content === ""
          ? "(the client sent no diff text for this selection)"
          : truncateMiddle(content, ITEM_LIMIT),
      ),
    });
  }
  for (const browser of selected.selectedBrowsers) {
    items.push({
      key: `browser:${browser.browserId}`,
      text: tag(
        "attached_browser",
        { url: browser.url },
        `The user attached the browser tab "${browser.pageTitle ?? browser.url}" (${browser.url}). ` +
          "Its page content is not part of this request.",
      ),
    });
  }
  selected.uiElements.forEach((element, index) => {
    const parts = [element.element, `XPath: ${element.xpath}`];
    if (element.component !== undefined) parts.push(`Component: ${element.component}`);
    if (element.componentPropsJson !== undefined)
      parts.push(`Props: ${element.componentPropsJson}`);
    if (element.textContent !== "") parts.push(`Text: ${element.textContent}`);
    if (element.extra !== "") parts.push(element.extra);
    items.push({
      key: `ui-element:${index}:${element.xpath}`,
      text: tag("attached_ui_element", {}, truncateMiddle(parts.join("\n"), SMALL_LIMIT)),
    });
  });
  if (selected.consoleLogs.length > 0) {
    const lines = selected.consoleLogs.map(
      (entry) =>
        `[${entry.level}] ${entry.message}${entry.objectDataJson === undefined ? "" : ` ${entry.objectDataJson}`}`,
    );
    items.push({
      key: "console-logs",
      text: tag("attached_console_logs", {}, truncateMiddle(lines.join("\n"), ITEM_LIMIT)),
    });
  }
  for (const document of selected.selectedDocuments) {
    items.push(renderDocument(document, blobs));
  }
  for (const video of selected.selectedVideos) {
    const name = video.filename || video.path || video.uuid;
    items.push({
      key: `video:${video.uuid || name}`,
      text: tag(
        "attached_video",
        { name },
        "The user attached this video; videos cannot be passed to the model here.",
      ),
    });
  }
  for (const skill of selected.selectedSkills) {
    items.push({
      key: `skill:${skill.fullPath}`,
      text: tag(
        "skill",
        { path: skill.fullPath },
        `The user asked you to use this skill.\n\n${truncateMiddle(skill.content.trim(), ITEM_LIMIT)}`,
      ),
    });
  }
  for (const subagent of selected.selectedSubagents) {
    const definition = requestContext?.customSubagents.find(
      (entry) => entry.name === subagent.name,
    );
    const body =
      definition === undefined || definition.prompt.trim() === ""
        ? `The user asked for the subagent "${subagent.name}", whose definition was not sent. ` +
          "Do the task yourself."
        : `The user asked for the subagent "${subagent.name}": delegate the task to it with the ` +
          `task tool (subagent_type "${subagent.name}"). Where the task tool is not offered, do ` +
          `the task yourself, following its instructions.\n\n${truncateMiddle(definition.prompt.trim(), ITEM_LIMIT)}`;
    items.push({
      key: `subagent:${subagent.name}`,
      text: tag("subagent", { name: subagent.name }, body),
    });
  }
  return items;
}

function renderDocument(document: SelectedDocument, blobs: BlobStore): ContextSupplement {
  const name = document.filename || document.path || document.uuid;
  const key = `document:${document.uuid || name}`;
  const attributes = { name, type: document.mimeType || "unknown" };
  const bytes = documentBytes(document, blobs);
  if (bytes === null) {
    return {
      key,
      text: tag(
        "attached_document",
        attributes,
        "(the client did not send this document's content)",
      ),
    };
  }
  if (!TEXT_TYPES.test(document.mimeType) && !looksLikeText(bytes)) {
    return {
      key,
      text: tag(
        "attached_document",
        attributes,
        `(${bytes.length} bytes of ${document.mimeType || "binary data"}: this server cannot turn ` +
          "it into text; ask the user for the parts that matter)",
      ),
    };
  }
  return {
    key,
    text: tag(
      "attached_document",
      attributes,
      truncateMiddle(new TextDecoder().decode(bytes), ITEM_LIMIT),
    ),
  };
}

function documentBytes(document: SelectedDocument, blobs: BlobStore): Uint8Array | null {
  const source = document.dataOrBlobId;
  switch (source.case) {
    case "data":
      return source.value;
    case "blobId":
      return findBlob(blobs, source.value);
    case "blobIdWithData":
      return source.value.data.length > 0
        ? source.value.data
        : findBlob(blobs, source.value.blobId);
    case undefined:
      return null;
  }
}

function textOfBlob(blobs: BlobStore, id: Uint8Array | undefined): string | null {
  const blob = findBlob(blobs, id);
  return blob === null ? null : new TextDecoder().decode(blob);
}

/** UTF-8 without NUL bytes in its first 8 KiB: treated as text whatever its declared type. */
function looksLikeText(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, 8192);
  if (head.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head);
    return true;
  } catch {
    // A cut multi-byte character at the 8 KiB boundary is not binary.
    return head.length === 8192;
  }
}

/**
 * Fields the client sent with the user's message that no supplement renders (ones this schema
 * does not model arrive as unknown fields), named for a debug log so they are never dropped
 * without a trace: `selected_context.<number>`.
 */
export function findUnusedContext(selected: SelectedContext | undefined): string[] {
  const numbers = new Set((selected?.$unknown ?? []).map((field) => field.no));
  return [...numbers].sort((a, b) => a - b).map((no) => `selected_context.${no}`);
}
