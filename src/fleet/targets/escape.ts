// Record text made inert in chat markup (pure): Slack mrkdwn (`<!channel>`, `<url|text>` links, `&<>` as Slack's
// docs require) and Teams markdown (links, emphasis, headings), so a description shows as the words it holds.

/** Text for a Slack `mrkdwn` field: `&`, `<` and `>` as entities, so no mention, link or date token is parsed. */
export function slackText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Cuts escaped Slack text to `max` characters without splitting an entity (`&amp;`), marking the cut with `…`. */
export function truncateSlackText(escaped: string, max: number): string {
  if (escaped.length <= max) return escaped;
  return `${escaped.slice(0, max - 1).replace(/&[a-z]*$/, "")}…`;
}

/**
 * Text for Teams markdown (an Adaptive Card TextBlock or fact): the marks of links, emphasis, code and headings
 * backslash-escaped (`[text](url)` shows as typed), and line breaks as spaces (no list or heading can start a line).
 */
export function teamsText(text: string): string {
  return text.replace(/[\\`*_[\]()#<>~]/g, "\\$&").replace(/[\r\n]+/g, " ");
}
