/**
 * Updates of a request-stream binding that both stores' triggers refuse (migrations SQLite 7,
 * PostgreSQL 11): everything but setting its saved client state to null. Row `r-earlier` of the
 * migration tests; the same SQL in both dialects.
 */
export const REFUSED_BINDING_UPDATES: readonly string[] = [
  "update request_streams set conversation_id = 'c2' where request_id = 'r-earlier'",
  "update request_streams set request_id = 'r3' where request_id = 'r-earlier'",
  "update request_streams set turn_id = 't9' where request_id = 'r-earlier'",
  "update request_streams set turn_id = null where request_id = 'r-earlier'",
  "update request_streams set created_at = 9 where request_id = 'r-earlier'",
];
