/**
 * Field numbers of the schema against cursor-protocol.md §2, written out independently of the
 * .proto files: every field of each message listed here must carry exactly the number below,
 * and the message may have no field that is not listed. A typo in a .proto (a wrong number, a
 * field in the wrong oneof) fails here instead of silently breaking the real client.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { DescMessage } from "@bufbuild/protobuf";
import * as agentStream from "./gen/agent/v1/agent_stream_pb.js";
import * as common from "./gen/agent/v1/common_pb.js";
import * as action from "./gen/agent/v1/conversation_action_pb.js";
import * as state from "./gen/agent/v1/conversation_state_pb.js";
import * as files from "./gen/agent/v1/exec_files_pb.js";
import * as mcpExec from "./gen/agent/v1/exec_mcp_pb.js";
import * as exec from "./gen/agent/v1/exec_pb.js";
import * as shell from "./gen/agent/v1/exec_shell_pb.js";
import * as query from "./gen/agent/v1/interaction_query_pb.js";
import * as update from "./gen/agent/v1/interaction_update_pb.js";
import * as kv from "./gen/agent/v1/kv_pb.js";
import * as mcp from "./gen/agent/v1/mcp_pb.js";
import * as models from "./gen/agent/v1/models_pb.js";
import * as nameAgent from "./gen/agent/v1/name_agent_pb.js";
import * as context from "./gen/agent/v1/request_context_pb.js";
import * as run from "./gen/agent/v1/run_request_pb.js";
import * as toolCall from "./gen/agent/v1/tool_call_pb.js";
import * as user from "./gen/agent/v1/user_message_pb.js";
import * as availableModels from "./gen/aiserver/v1/available_models_pb.js";
import * as bidi from "./gen/aiserver/v1/bidi_pb.js";
import * as errors from "./gen/aiserver/v1/error_details_pb.js";
import * as gitText from "./gen/aiserver/v1/git_text_pb.js";
import * as config from "./gen/aiserver/v1/server_config_pb.js";
import * as time from "./gen/aiserver/v1/server_time_pb.js";

/** message → { proto field name: number }, transcribed from cursor-protocol.md §2 (and §1.6, §6). */
const EXPECTED: [DescMessage, Record<string, number>][] = [
  // §2.1
  [bidi.BidiRequestIdSchema, { request_id: 1 }],
  [bidi.BidiAppendRequestSchema, { data: 1, request_id: 2, append_seqno: 3, data_binary: 4 }],
  [bidi.BidiPollRequestSchema, { request_id: 1, start_request: 2 }],
  [bidi.BidiPollResponseSchema, { seqno: 1, data: 2, eof: 3 }],
  // §2.2
  [
    agentStream.AgentClientMessageSchema,
    {
      run_request: 1,
      exec_client_message: 2,
      kv_client_message: 3,
      conversation_action: 4,
      exec_client_control_message: 5,
      interaction_response: 6,
      client_heartbeat: 7,
      prewarm_request: 8,
    },
  ],
  [
    agentStream.AgentServerMessageSchema,
    {
      interaction_update: 1,
      exec_server_message: 2,
      conversation_checkpoint_update: 3,
      kv_server_message: 4,
      exec_server_control_message: 5,
      interaction_query: 7,
      ttft_breakdown: 8,
    },
  ],
  [
    agentStream.TtftBreakdownSchema,
    {
      server_first_token_ms: 1,
      pre_stream_setup_ms: 2,
      wait_for_first_event_ms: 3,
      provider_ttft_ms: 4,
      slow_pool_wait_ms: 5,
    },
  ],
  // §2.3 (fields 7 and 20 are not modelled)
  [
    run.AgentRunRequestSchema,
    {
      conversation_state: 1,
      action: 2,
      model_details: 3,
      mcp_tools: 4,
      conversation_id: 5,
      mcp_file_system_options: 6,
      custom_system_prompt: 8,
      requested_model: 9,
      suggest_next_prompt: 10,
      subagent_type_name: 11,
      exclude_workspace_context: 12,
      harness: 13,
      selected_subagent_models: 14,
      selected_subagent_model_details: 15,
      conversation_group_id: 16,
      pre_fetched_blobs: 17,
      dev_raw_model_slug: 18,
      client_supports_inline_images: 19,
      can_create_cloud_subagents: 21,
      suppress_subagent_progress_update_tool: 22,
      client_supports_send_to_user: 23,
      computer_use_coordinate_mode: 24,
      run_id: 25,
    },
  ],
  [
    run.PrewarmRequestSchema,
    {
      model_details: 1,
      conversation_id: 2,
      conversation_state: 3,
      mcp_tools: 4,
      mcp_file_system_options: 5,
      best_of_n_group_id: 6,
      try_use_best_of_n_promotion: 7,
      custom_system_prompt: 8,
      requested_model: 9,
      suggest_next_prompt: 10,
      subagent_type_name: 11,
      exclude_workspace_context: 12,
      harness: 13,
      selected_subagent_models: 14,
      selected_subagent_model_details: 15,
      conversation_group_id: 16,
      pre_fetched_blobs: 17,
      client_supports_inline_images: 18,
      can_create_cloud_subagents: 20,
      suppress_subagent_progress_update_tool: 21,
      client_supports_send_to_user: 22,
      computer_use_coordinate_mode: 23,
    },
  ],
  [
    models.ModelDetailsSchema,
    {
      model_id: 1,
      thinking_details: 2,
      display_model_id: 3,
      display_name: 4,
      display_name_short: 5,
      aliases: 6,
      max_mode: 7,
      api_key_credentials: 8,
      azure_credentials: 9,
      bedrock_credentials: 10,
    },
  ],
  [models.ApiKeyCredentialsSchema, { api_key: 1, base_url: 2 }],
  [
    models.RequestedModelSchema,
    {
      model_id: 1,
      max_mode: 2,
      parameters: 3,
      api_key_credentials: 4,
      azure_credentials: 5,
      bedrock_credentials: 6,
      built_in_model: 7,
      is_variant_string_representation: 8,
    },
  ],
  [models.RequestedModel_ModelParameterValueSchema, { id: 1, value: 2 }],
  [mcp.McpToolsSchema, { mcp_tools: 1 }],
  [
    mcp.McpToolDefinitionSchema,
    {
      name: 1,
      description: 2,
      input_schema: 3,
      provider_identifier: 4,
      tool_name: 5,
      input_schema_json: 6,
    },
  ],
  [mcp.McpFileSystemOptionsSchema, { enabled: 1, workspace_project_dir: 2, mcp_descriptors: 3 }],
  [mcp.McpInstructionsSchema, { server_name: 1, instructions: 2, server_identifier: 3 }],
  [run.PreFetchedBlobSchema, { id: 1, value: 2 }],
  // §2.4 (ConversationAction 12, 15-19 and UserMessage 9, 13-15, 22, 23 not modelled)
  [
    action.ConversationActionSchema,
    {
      user_message_action: 1,
      resume_action: 2,
      cancel_action: 3,
      summarize_action: 4,
      shell_command_action: 5,
      start_plan_action: 6,
      execute_plan_action: 7,
      async_ask_question_completion_action: 8,
      cancel_subagent_action: 10,
      triggering_auth_id: 11,
      background_shell_action: 13,
      background_subagent_action: 14,
    },
  ],
  [
    action.UserMessageActionSchema,
    {
      user_message: 1,
      request_context: 2,
      send_to_interaction_listener: 3,
      prepend_user_messages: 4,
    },
  ],
  [action.ResumeActionSchema, { request_context: 2 }],
  [action.CancelActionSchema, { reason: 1 }],
  [action.StartPlanActionSchema, { user_message: 1, request_context: 2, is_spec: 3 }],
  [
    action.ExecutePlanActionSchema,
    {
      request_context: 1,
      plan: 2,
      plan_file_uri: 3,
      plan_file_content: 4,
      execution_mode: 5,
      kickoff_message_id: 6,
      plan_id: 7,
      plan_file_path: 8,
    },
  ],
  [action.ShellCommandActionSchema, { shell_command: 1, exec_id: 2 }],
  [action.CancelSubagentActionSchema, { subagent_id: 1 }],
  [
    user.UserMessageSchema,
    {
      text: 1,
      message_id: 2,
      selected_context: 3,
      mode: 4,
      is_simulated_msg: 5,
      best_of_n_group_id: 6,
      try_use_best_of_n_promotion: 7,
      rich_text: 8,
      conversation_state_blob_id: 10,
      subagent_system_reminder: 11,
      prompt_reference_id: 16,
      thread_id: 17,
      text_blob_id: 18,
      rich_text_blob_id: 19,
      hook_additional_contexts: 21,
    },
  ],
  [
    context.RequestContextSchema,
    {
      rules: 2,
      env: 4,
      tools: 7,
      conversation_notes_listing: 8,
      shared_notes_listing: 9,
      git_repos: 11,
      project_layouts: 13,
      mcp_instructions: 14,
      cloud_rule: 16,
      web_search_enabled: 17,
      file_contents: 20,
      user_intent_summary: 21,
      mcp_file_system_options: 23,
      web_fetch_enabled: 24,
      hooks_additional_context: 25,
      read_lints_enabled: 35,
      non_file_rules: 37,
      custom_subagents: 22,
      agent_skills: 29,
      user_permissions_auto_run: 46,
      project_permissions_auto_run: 47,
      admin_permissions_auto_run: 48,
      disabled_team_rules: 49,
      admin_command_denylist: 52,
    },
  ],
  [
    context.RequestContextEnvSchema,
    {
      os_version: 1,
      workspace_paths: 2,
      shell: 3,
      sandbox_enabled: 5,
      terminals_folder: 7,
      agent_shared_notes_folder: 8,
      agent_conversation_notes_folder: 9,
      time_zone: 10,
      project_folder: 11,
      agent_transcripts_folder: 12,
      artifacts_folder: 13,
      sandbox_supported: 14,
      sandbox_network_has_defaults: 16,
      sandbox_network_explicit_allowlist: 17,
      secret_redaction_enabled: 18,
      computer_use_supported: 19,
      is_working_dir_home_dir: 20,
      process_working_directory: 21,
      smart_mode_classifier_auto_mode_enabled: 22,
      dev_force_next_smart_mode_classifier_block_token: 23,
      dev_delay_next_smart_mode_classifier_token: 24,
    },
  ],
  [
    common.CursorRuleSchema,
    {
      full_path: 1,
      content: 2,
      type: 3,
      source: 4,
      git_remote_origin: 5,
      parse_error: 6,
      environments: 7,
      disabled_environments: 8,
      plugin: 9,
      marketplace: 10,
      plugin_id: 11,
      marketplace_id: 12,
      scoped_to: 13,
      frontmatter: 14,
      is_required: 15,
    },
  ],
  // §2.5: every InteractionUpdate branch and the payloads we send
  [
    update.InteractionUpdateSchema,
    {
      text_delta: 1,
      tool_call_started: 2,
      tool_call_completed: 3,
      thinking_delta: 4,
      thinking_completed: 5,
      user_message_appended: 6,
      partial_tool_call: 7,
      token_delta: 8,
      summary: 9,
      summary_started: 10,
      summary_completed: 11,
      shell_output_delta: 12,
      heartbeat: 13,
      turn_ended: 14,
      tool_call_delta: 15,
      step_started: 16,
      step_completed: 17,
      prompt_suggestion: 18,
      post_request_prompt: 19,
      active_branch_change: 20,
      feedback_request: 21,
      response_comparison: 22,
      context_injection_state: 23,
    },
  ],
  [update.TextDeltaUpdateSchema, { text: 1, is_server_notice: 2 }],
  [update.ToolCallStartedUpdateSchema, { call_id: 1, tool_call: 2, model_call_id: 3 }],
  [update.ToolCallCompletedUpdateSchema, { call_id: 1, tool_call: 2, model_call_id: 3 }],
  [update.ThinkingDeltaUpdateSchema, { text: 1, thinking_style: 2 }],
  [update.ThinkingCompletedUpdateSchema, { thinking_duration_ms: 1 }],
  [update.UserMessageAppendedUpdateSchema, { user_message: 1 }],
  [
    update.PartialToolCallUpdateSchema,
    { call_id: 1, tool_call: 2, args_text_delta: 3, model_call_id: 4 },
  ],
  [update.TokenDeltaUpdateSchema, { tokens: 1 }],
  [update.SummaryUpdateSchema, { summary: 1 }],
  [update.SummaryCompletedUpdateSchema, { hook_message: 1 }],
  [update.ShellOutputDeltaUpdateSchema, { stdout: 1, stderr: 2, exit: 3, start: 4 }],
  [
    update.TurnEndedUpdateSchema,
    {
      input_tokens: 1,
      output_tokens: 2,
      cache_read_tokens: 3,
      cache_write_tokens: 4,
      reasoning_tokens: 5,
    },
  ],
  [update.ToolCallDeltaUpdateSchema, { call_id: 1, tool_call_delta: 2, model_call_id: 3 }],
  [update.StepStartedUpdateSchema, { step_id: 1 }],
  [update.StepCompletedUpdateSchema, { step_id: 1, step_duration_ms: 2 }],
  [update.PromptSuggestionUpdateSchema, { suggestion: 1 }],
  [update.PostRequestPromptUpdateSchema, { title: 1, message: 2, button_label: 3, button_url: 4 }],
  [update.ActiveBranchChangeSchema, { path: 1, branch_name: 2 }],
  [
    update.FeedbackRequestUpdateSchema,
    {
      request_id: 1,
      canonical_model_name: 2,
      categories: 3,
      category_groups: 4,
      show_form_immediately: 5,
      title: 6,
      negative_title: 7,
      comment_placeholder: 8,
    },
  ],
  [
    update.ResponseComparisonUpdateSchema,
    { comparison_id: 1, started: 2, text_delta: 3, completed: 4, skipped: 5 },
  ],
  [update.ContextInjectionStateUpdateSchema, { injection_id: 1, state: 2 }],
  [toolCall.ToolCallDeltaSchema, { shell_tool_call_delta: 1, edit_tool_call_delta: 3 }],
  [toolCall.ShellToolCallDeltaSchema, { stdout: 1, stderr: 2 }],
  [toolCall.EditToolCallDeltaSchema, { stream_content_delta: 1 }],
  // §2.6
  [
    toolCall.ToolCallSchema,
    {
      shell_tool_call: 1,
      delete_tool_call: 3,
      glob_tool_call: 4,
      grep_tool_call: 5,
      read_tool_call: 8,
      update_todos_tool_call: 9,
      read_todos_tool_call: 10,
      edit_tool_call: 12,
      ls_tool_call: 13,
      read_lints_tool_call: 14,
      mcp_tool_call: 15,
      create_plan_tool_call: 17,
      web_search_tool_call: 18,
      ask_question_tool_call: 23,
      fetch_tool_call: 24,
      switch_mode_tool_call: 25,
      write_shell_stdin_tool_call: 31,
      web_fetch_tool_call: 37,
      hook_additional_contexts: 54,
      tool_call_id: 57,
      started_at_ms: 59,
      completed_at_ms: 60,
    },
  ],
  [toolCall.ShellToolCallSchema, { args: 1, result: 2, description: 3 }],
  [toolCall.McpToolCallSchema, { args: 1, result: 2, description: 3 }],
  [toolCall.ReadToolArgsSchema, { path: 1, offset: 2, limit: 3, include_line_numbers: 5 }],
  [toolCall.ReadToolResultSchema, { success: 1, error: 2 }],
  [
    toolCall.ReadToolSuccessSchema,
    {
      content: 1,
      is_empty: 2,
      exceeded_limit: 3,
      total_lines: 4,
      file_size: 5,
      data: 6,
      path: 7,
      read_range: 8,
      data_blob_id: 9,
      content_blob_id: 10,
      include_line_numbers: 11,
      related_cursor_rule_paths: 12,
      related_cursor_rules: 13,
    },
  ],
  [toolCall.EditArgsSchema, { path: 1, stream_content: 6 }],
  [
    toolCall.EditResultSchema,
    {
      success: 1,
      file_not_found: 2,
      read_permission_denied: 3,
      write_permission_denied: 4,
      rejected: 6,
      error: 7,
    },
  ],
  [
    toolCall.EditSuccessSchema,
    {
      path: 1,
      lines_added: 3,
      lines_removed: 4,
      diff_string: 5,
      before_full_file_content: 6,
      after_full_file_content: 7,
      message: 8,
    },
  ],
  [toolCall.EditErrorSchema, { path: 1, error: 2, model_visible_error: 5 }],
  [toolCall.GlobToolArgsSchema, { target_directory: 1, glob_pattern: 2 }],
  [
    toolCall.GlobToolSuccessSchema,
    { pattern: 1, path: 2, files: 3, total_files: 4, client_truncated: 5, ripgrep_truncated: 6 },
  ],
  [toolCall.UpdateTodosArgsSchema, { todos: 1, merge: 2 }],
  [toolCall.UpdateTodosSuccessSchema, { todos: 1, total_count: 2, was_merge: 3 }],
  [
    common.TodoItemSchema,
    { id: 1, content: 2, status: 3, created_at: 4, updated_at: 5, dependencies: 6 },
  ],
  [query.WebSearchArgsSchema, { search_term: 1, tool_call_id: 2 }],
  [toolCall.WebSearchReferenceSchema, { title: 1, url: 2, chunk: 3 }],
  [toolCall.WebSearchResultSchema, { success: 1, error: 2, rejected: 3 }],
  // §2.7
  [
    exec.ExecServerMessageSchema,
    {
      id: 1,
      shell_args: 2,
      write_args: 3,
      delete_args: 4,
      grep_args: 5,
      read_args: 7,
      ls_args: 8,
      diagnostics_args: 9,
      request_context_args: 10,
      mcp_args: 11,
      shell_stream_args: 14,
      exec_id: 15,
      span_context: 19,
      background_shell_spawn_args: 16,
      fetch_args: 20,
      write_shell_stdin_args: 23,
      redacted_read_args: 29,
      force_background_shell_args: 30,
      accept_hook_additional_contexts: 55,
    },
  ],
  [
    exec.ExecClientMessageSchema,
    {
      id: 1,
      shell_result: 2,
      write_result: 3,
      delete_result: 4,
      grep_result: 5,
      read_result: 7,
      ls_result: 8,
      diagnostics_result: 9,
      request_context_result: 10,
      mcp_result: 11,
      shell_stream: 14,
      exec_id: 15,
      background_shell_spawn_result: 16,
      fetch_result: 20,
      write_shell_stdin_result: 23,
      redacted_read_result: 29,
      force_background_shell_result: 30,
      local_execution_time_ms: 39,
      hook_additional_contexts: 45,
    },
  ],
  [common.SpanContextSchema, { trace_id: 1, span_id: 2, trace_flags: 3, trace_state: 4 }],
  [files.ReadArgsSchema, { path: 1, tool_call_id: 2, offset: 4, limit: 5, encoding_hint: 6 }],
  [
    files.ReadResultSchema,
    { success: 1, error: 2, rejected: 3, file_not_found: 4, permission_denied: 5, invalid_file: 6 },
  ],
  [
    files.ReadSuccessSchema,
    {
      path: 1,
      content: 2,
      total_lines: 3,
      file_size: 4,
      data: 5,
      truncated: 6,
      output_blob_id: 7,
      range_applied: 8,
    },
  ],
  [files.ReadErrorSchema, { path: 1, error: 2 }],
  [
    shell.ShellArgsSchema,
    {
      command: 1,
      working_directory: 2,
      timeout: 3,
      tool_call_id: 4,
      simple_commands: 5,
      has_input_redirect: 6,
      has_output_redirect: 7,
      parsing_result: 8,
      file_output_threshold_bytes: 10,
      is_background: 11,
      skip_approval: 12,
      timeout_behavior: 13,
      hard_timeout: 14,
      description: 15,
      close_stdin: 17,
      conversation_id: 21,
    },
  ],
  [
    shell.ShellResultSchema,
    {
      success: 1,
      failure: 2,
      timeout: 3,
      rejected: 4,
      spawn_error: 5,
      permission_denied: 7,
      is_background: 102,
      terminals_folder: 103,
      pid: 104,
    },
  ],
  [
    shell.ShellSuccessSchema,
    {
      command: 1,
      working_directory: 2,
      exit_code: 3,
      signal: 4,
      stdout: 5,
      stderr: 6,
      execution_time: 7,
      output_location: 8,
      shell_id: 9,
      interleaved_output: 10,
      pid: 11,
      ms_to_wait: 12,
      local_execution_time_ms: 13,
      background_reason: 14,
      output_head: 15,
      output_tail: 16,
      elided_chars: 17,
    },
  ],
  [
    shell.ShellFailureSchema,
    {
      command: 1,
      working_directory: 2,
      exit_code: 3,
      signal: 4,
      stdout: 5,
      stderr: 6,
      execution_time: 7,
      output_location: 8,
      interleaved_output: 9,
      abort_reason: 10,
      aborted: 11,
      local_execution_time_ms: 12,
      output_head: 13,
      output_tail: 14,
      elided_chars: 15,
    },
  ],
  [shell.ShellTimeoutSchema, { command: 1, working_directory: 2, timeout_ms: 3 }],
  [shell.ShellRejectedSchema, { command: 1, working_directory: 2, reason: 3, is_readonly: 4 }],
  [shell.ShellSpawnErrorSchema, { command: 1, working_directory: 2, error: 3 }],
  [
    shell.ShellStreamSchema,
    {
      stdout: 1,
      stderr: 2,
      exit: 3,
      start: 4,
      rejected: 5,
      permission_denied: 6,
      backgrounded: 7,
      hook_context: 8,
      sandbox_unsupported: 9,
    },
  ],
  [shell.ShellStreamStdoutSchema, { data: 1 }],
  [shell.ShellStreamStderrSchema, { data: 1 }],
  [
    shell.ShellStreamExitSchema,
    {
      code: 1,
      cwd: 2,
      output_location: 3,
      aborted: 4,
      abort_reason: 5,
      local_execution_time_ms: 6,
    },
  ],
  [
    shell.ShellStreamBackgroundedSchema,
    { shell_id: 1, command: 2, working_directory: 3, pid: 4, ms_to_wait: 5, reason: 6 },
  ],
  [
    files.WriteArgsSchema,
    {
      path: 1,
      file_text: 2,
      tool_call_id: 3,
      return_file_content_after_write: 4,
      file_bytes: 5,
      encoding_hint: 6,
    },
  ],
  [
    files.WriteResultSchema,
    { success: 1, permission_denied: 3, no_space: 4, error: 5, rejected: 6 },
  ],
  [
    files.WriteSuccessSchema,
    { path: 1, lines_created: 2, file_size: 3, file_content_after_write: 4 },
  ],
  [
    files.WritePermissionDeniedSchema,
    { path: 1, directory: 2, operation: 3, error: 4, is_readonly: 5 },
  ],
  [files.DeleteArgsSchema, { path: 1, tool_call_id: 2 }],
  [
    files.DeleteResultSchema,
    {
      success: 1,
      file_not_found: 2,
      not_file: 3,
      permission_denied: 4,
      file_busy: 5,
      rejected: 6,
      error: 7,
    },
  ],
  [files.DeleteSuccessSchema, { path: 1, deleted_file: 2, file_size: 3, prev_content: 4 }],
  [files.DeletePermissionDeniedSchema, { path: 1, client_visible_error: 2, is_readonly: 3 }],
  [
    files.GrepArgsSchema,
    {
      pattern: 1,
      path: 2,
      glob: 3,
      output_mode: 4,
      context_before: 5,
      context_after: 6,
      context: 7,
      case_insensitive: 8,
      type: 9,
      head_limit: 10,
      multiline: 11,
      sort: 12,
      sort_ascending: 13,
      tool_call_id: 14,
      offset: 16,
    },
  ],
  [files.GrepResultSchema, { success: 1, error: 2 }],
  [
    files.GrepSuccessSchema,
    { pattern: 1, path: 2, output_mode: 3, workspace_results: 4, active_editor_result: 5 },
  ],
  [files.GrepUnionResultSchema, { count: 1, files: 2, content: 3 }],
  [
    files.GrepFilesResultSchema,
    {
      files: 1,
      total_files: 2,
      client_truncated: 3,
      ripgrep_truncated: 4,
      head_limit_applied: 5,
      offset_applied: 6,
    },
  ],
  [
    files.GrepCountResultSchema,
    {
      counts: 1,
      total_files: 2,
      total_matches: 3,
      client_truncated: 4,
      ripgrep_truncated: 5,
      head_limit_applied: 6,
      offset_applied: 7,
    },
  ],
  [
    files.GrepContentResultSchema,
    {
      matches: 1,
      total_lines: 2,
      total_matched_lines: 3,
      client_truncated: 4,
      ripgrep_truncated: 5,
      head_limit_applied: 6,
      offset_applied: 7,
    },
  ],
  [files.GrepFileMatchSchema, { file: 1, matches: 2 }],
  [
    files.GrepContentMatchSchema,
    { line_number: 1, content: 2, content_truncated: 3, is_context_line: 4 },
  ],
  [files.LsArgsSchema, { path: 1, ignore: 2, tool_call_id: 3, timeout_ms: 5 }],
  [files.LsResultSchema, { success: 1, error: 2, rejected: 3, timeout: 4 }],
  [
    common.LsDirectoryTreeNodeSchema,
    {
      abs_path: 1,
      children_dirs: 2,
      children_files: 3,
      children_were_processed: 4,
      full_subtree_extension_counts: 5,
      num_files: 6,
    },
  ],
  [files.DiagnosticsArgsSchema, { path: 1, tool_call_id: 2 }],
  [
    files.DiagnosticsResultSchema,
    { success: 1, error: 2, rejected: 3, file_not_found: 4, permission_denied: 5 },
  ],
  [files.DiagnosticsSuccessSchema, { path: 1, diagnostics: 2, total_diagnostics: 3 }],
  [files.DiagnosticSchema, { severity: 1, range: 2, message: 3, source: 4, code: 5, is_stale: 6 }],
  [
    context.RequestContextArgsSchema,
    {
      notes_session_id: 2,
      workspace_id: 3,
      read_only_pinned_tree_sha: 4,
      read_only_plugin_cache_root: 5,
      use_cached: 7,
    },
  ],
  [context.RequestContextResultSchema, { success: 1, error: 2, rejected: 3 }],
  [context.RequestContextSuccessSchema, { request_context: 1, served_from_disk_cache: 2 }],
  [
    mcpExec.McpArgsSchema,
    {
      name: 1,
      args: 2,
      tool_call_id: 3,
      provider_identifier: 4,
      tool_name: 5,
      smart_mode_approval_only: 7,
      skip_approval: 8,
      server_identifier: 9,
    },
  ],
  [
    mcpExec.McpResultSchema,
    {
      success: 1,
      error: 2,
      rejected: 3,
      permission_denied: 4,
      tool_not_found: 5,
      server_not_found: 6,
      approved: 7,
    },
  ],
  [mcpExec.McpSuccessSchema, { content: 1, is_error: 2, structured_content: 3 }],
  [mcpExec.McpToolResultContentItemSchema, { text: 1, image: 2 }],
  [mcpExec.McpToolResultSchema, { success: 1, error: 2, rejected: 3, permission_denied: 4 }],
  [files.FetchArgsSchema, { url: 1, tool_call_id: 2 }],
  [files.FetchResultSchema, { success: 1, error: 2 }],
  [files.FetchSuccessSchema, { url: 1, content: 2, status_code: 3, content_type: 4 }],
  // §2.8
  [exec.ExecServerControlMessageSchema, { abort: 1 }],
  [exec.ExecServerAbortSchema, { id: 1 }],
  [exec.ExecClientControlMessageSchema, { stream_close: 1, throw: 2, heartbeat: 3 }],
  [exec.ExecClientStreamCloseSchema, { id: 1 }],
  [exec.ExecClientThrowSchema, { id: 1, error: 2, stack_trace: 3, error_code: 4 }],
  [exec.ExecClientHeartbeatSchema, { id: 1 }],
  // §2.9
  [kv.KvServerMessageSchema, { id: 1, get_blob_args: 2, set_blob_args: 3, span_context: 4 }],
  [kv.KvClientMessageSchema, { id: 1, get_blob_result: 2, set_blob_result: 3 }],
  [kv.GetBlobArgsSchema, { blob_id: 1 }],
  [kv.SetBlobArgsSchema, { blob_id: 1, blob_data: 2 }],
  [kv.GetBlobResultSchema, { blob_data: 1, error: 2 }],
  [kv.SetBlobResultSchema, { error: 1 }],
  [kv.ErrorSchema, { message: 1 }],
  // §2.10 (16, 23, 29, 30, 32 not modelled)
  [
    state.ConversationStateStructureSchema,
    {
      root_prompt_messages_json: 1,
      todos: 3,
      pending_tool_calls: 4,
      token_details: 5,
      summary: 6,
      plan: 7,
      turns: 8,
      previous_workspace_uris: 9,
      mode: 10,
      summary_archive: 11,
      file_states: 12,
      summary_archives: 13,
      turn_timings: 14,
      file_states_v2: 15,
      self_summary_count: 17,
      read_paths: 18,
      active_branch_name: 19,
      plans: 20,
      tracked_git_repo_branches: 21,
      agent_type: 22,
      subagent_threads: 24,
      communicate_update_final_summary: 25,
      conversation_started_timestamp_ms: 26,
      conversation_started_time_zone: 27,
      communicate_update_completed_subtitle: 28,
      subagent_state_refs: 31,
    },
  ],
  [state.ConversationTokenDetailsSchema, { used_tokens: 1, max_tokens: 2, breakdown: 3 }],
  [state.StepTimingSchema, { duration_ms: 1, timestamp_ms: 2 }],
  [
    state.ConversationTurnStructureSchema,
    { agent_conversation_turn: 1, shell_conversation_turn: 2 },
  ],
  [
    state.AgentConversationTurnStructureSchema,
    { user_message: 1, steps: 2, request_id: 3, encrypted_model: 4, dynamic_tool_count: 5 },
  ],
  [state.ConversationStepSchema, { assistant_message: 1, tool_call: 2, thinking_message: 3 }],
  [state.AssistantMessageSchema, { text: 1 }],
  [state.ThinkingMessageSchema, { text: 1, duration_ms: 2 }],
  [state.AgentConversationTurnSchema, { user_message: 1, steps: 2, request_id: 3 }],
  // §2.11
  [
    query.InteractionQuerySchema,
    {
      id: 1,
      web_search_request_query: 2,
      ask_question_interaction_query: 3,
      switch_mode_request_query: 4,
      create_plan_request_query: 7,
      web_fetch_request_query: 9,
    },
  ],
  [
    query.InteractionResponseSchema,
    {
      id: 1,
      web_search_request_response: 2,
      ask_question_interaction_response: 3,
      switch_mode_request_response: 4,
      create_plan_request_response: 7,
      web_fetch_request_response: 9,
    },
  ],
  [query.AskQuestionInteractionQuerySchema, { args: 1, tool_call_id: 2 }],
  [query.CreatePlanRequestQuerySchema, { args: 1, tool_call_id: 2 }],
  [query.WebFetchRequestQuerySchema, { args: 1, skip_approval: 2 }],
  [query.WebFetchArgsSchema, { url: 1, tool_call_id: 2 }],
  [query.WebSearchRequestResponseSchema, { approved: 1, rejected: 2 }],
  [
    query.AskQuestionArgsSchema,
    { title: 1, questions: 2, run_async: 5, async_original_tool_call_id: 6 },
  ],
  [query.AskQuestionArgs_QuestionSchema, { id: 1, prompt: 2, options: 3, allow_multiple: 4 }],
  [query.AskQuestionArgs_OptionSchema, { id: 1, label: 2 }],
  [query.AskQuestionResultSchema, { success: 1, error: 2, rejected: 3, async: 4 }],
  [
    query.AskQuestionSuccess_AnswerSchema,
    { question_id: 1, selected_option_ids: 2, freeform_text: 3 },
  ],
  [query.SwitchModeArgsSchema, { target_mode_id: 1, explanation: 2, tool_call_id: 3 }],
  [query.SwitchModeResultSchema, { success: 1, error: 2, rejected: 3 }],
  [
    query.CreatePlanArgsSchema,
    { plan: 1, todos: 2, overview: 3, name: 4, is_project: 5, phases: 6 },
  ],
  [query.CreatePlanResultSchema, { success: 1, error: 2, plan_uri: 3 }],
  // §1.6
  [errors.ErrorDetailsSchema, { error: 1, details: 2, is_expected: 3 }],
  [
    errors.CustomErrorDetailsSchema,
    {
      title: 1,
      detail: 2,
      allow_command_links_potentially_unsafe_please_only_use_for_handwritten_trusted_markdown: 3,
      is_retryable: 4,
      show_request_id: 5,
      should_show_immediate_error: 6,
      additional_info: 7,
    },
  ],
  // §6 and §1.1
  [
    config.GetServerConfigResponseSchema,
    {
      indexing_config: 3,
      config_version: 6,
      http2_config: 7,
      use_nlb_for_nal: 26,
      agent_url_config: 27,
      cli_sandbox_default_enabled: 28,
    },
  ],
  [config.AgentUrlConfigSchema, { agent_url: 1, agentn_url: 2 }],
  [time.ServerTimeResponseSchema, { receive_timestamp: 1, transmit_timestamp: 2 }],
  [models.GetUsableModelsResponseSchema, { models: 1 }],
  [models.GetDefaultModelForCliResponseSchema, { model: 1 }],
  // The public schema extraction (proto/README.md): indexing keys, titles, git text, health.
  [
    config.IndexingConfigSchema,
    { default_user_path_encryption_key: 9, default_team_path_encryption_key: 10 },
  ],
  [nameAgent.NameAgentRequestSchema, { user_message: 1 }],
  // Background shells (exec 16, 23, 30).
  [
    shell.BackgroundShellSpawnArgsSchema,
    {
      command: 1,
      working_directory: 2,
      tool_call_id: 3,
      parsing_result: 4,
      enable_write_shell_stdin_tool: 6,
      description: 7,
      skip_approval: 12,
      conversation_id: 13,
    },
  ],
  [
    shell.BackgroundShellSpawnResultSchema,
    { success: 1, error: 2, rejected: 3, permission_denied: 4, sandbox_unsupported: 5 },
  ],
  [
    shell.BackgroundShellSpawnSuccessSchema,
    { shell_id: 1, command: 2, working_directory: 3, pid: 4 },
  ],
  [shell.BackgroundShellSpawnErrorSchema, { command: 1, working_directory: 2, error: 3 }],
  [shell.WriteShellStdinArgsSchema, { shell_id: 1, chars: 2 }],
  [shell.WriteShellStdinResultSchema, { success: 1, error: 2 }],
  [
    shell.WriteShellStdinSuccessSchema,
    { shell_id: 1, terminal_file_length_before_input_written: 2 },
  ],
  [shell.ForceBackgroundShellArgsSchema, { tool_call_id: 1 }],
  [shell.ForceBackgroundShellResultSchema, { status: 1, shell_result: 2 }],
  // Attached context and what the request context offers (protocol-coverage.md §6).
  [
    user.SelectedContextSchema,
    {
      selected_images: 1,
      extra_context: 3,
      files: 4,
      code_selections: 5,
      terminals: 6,
      terminal_selections: 7,
      folders: 8,
      external_links: 9,
      cursor_rules: 10,
      git_diff_from_branch_to_main: 11,
      cursor_commands: 12,
      documentations: 13,
      ui_elements: 14,
      console_logs: 15,
      extra_context_entries: 16,
      git_commits: 17,
      git_diff: 18,
      past_chats: 19,
      git_pr_diff_selections: 20,
      selected_pull_requests: 21,
      selected_subagents: 22,
      selected_videos: 23,
      selected_browsers: 24,
      selected_documents: 25,
      selected_skills: 26,
    },
  ],
  [user.SelectedDocumentationSchema, { doc_id: 1, name: 2 }],
  [
    user.SelectedUIElementSchema,
    { element: 1, xpath: 2, text_content: 3, extra: 4, component: 5, component_props_json: 6 },
  ],
  [
    user.SelectedConsoleLogSchema,
    { message: 1, timestamp: 2, level: 3, client_name: 4, session_id: 5, object_data_json: 7 },
  ],
  [user.SelectedPastChatSchema, { agent_id: 1, name: 2 }],
  [
    user.SelectedGitPRDiffSelectionSchema,
    { pr_url: 1, file_path: 2, start_line: 3, end_line: 4, diff_content: 5, blob_id: 6 },
  ],
  [
    user.SelectedPullRequestSchema,
    { number: 1, url: 2, title: 3, folder_path: 4, summary_json: 5, description: 6, blob_id: 7 },
  ],
  [user.SelectedSubagentSchema, { name: 1 }],
  [user.SelectedBrowserSchema, { browser_id: 1, url: 2, page_title: 3 }],
  [
    user.SelectedDocumentSchema,
    { blob_id: 1, uuid: 2, filename: 3, mime_type: 4, path: 7, data: 8, blob_id_with_data: 9 },
  ],
  [user.SelectedVideoSchema, { uuid: 2, path: 3, mime_type: 7, filename: 10 }],
  [
    common.AgentSkillSchema,
    { full_path: 1, content: 2, description: 3, parse_error: 4, disable_model_invocation: 8 },
  ],
  [
    context.CustomSubagentSchema,
    {
      full_path: 1,
      name: 2,
      description: 3,
      tools: 4,
      model: 5,
      prompt: 6,
      permission_mode: 7,
      is_background: 8,
    },
  ],
  [context.PermissionsAutoRunInstructionsSchema, { allow_instructions: 1, block_instructions: 2 }],
  [nameAgent.NameAgentResponseSchema, { name: 1 }],
  [
    gitText.WriteGitCommitMessageRequestSchema,
    { diffs: 1, previous_commit_messages: 2, explicit_context: 3 },
  ],
  [gitText.WriteGitCommitMessageResponseSchema, { commit_message: 1 }],
  [gitText.ExplicitContextSchema, { context: 1, repo_context: 2, mode_specific_context: 4 }],
  [gitText.WriteGitBranchNameRequestSchema, { diffs: 1, context: 2, conversation_id: 3 }],
  [gitText.WriteGitBranchNameResponseSchema, { branch_name: 1 }],
  [gitText.HealthCheckResponseSchema, { status: 1 }],
  [
    availableModels.AvailableModelsResponse_FeatureModelConfigSchema,
    { default_model: 1, fallback_models: 2, best_of_n_default_models: 3 },
  ],
];

test("every listed message has exactly the documented field numbers", () => {
  const problems: string[] = [];
  for (const [schema, expected] of EXPECTED) {
    const actual = Object.fromEntries(schema.fields.map((field) => [field.name, field.number]));
    for (const [name, number] of Object.entries(expected)) {
      if (actual[name] !== number)
        problems.push(`${schema.typeName}.${name}: expected ${number}, got ${actual[name]}`);
    }
    for (const [name, number] of Object.entries(actual)) {
      if (!(name in expected))
        problems.push(`${schema.typeName}.${name} = ${number} is not in the documented list`);
    }
  }
  assert.deepEqual(problems, []);
});

test("oneof membership: fields the protocol puts in a oneof are in one, others are not", () => {
  const oneofs: [DescMessage, string, string[]][] = [
    [
      agentStream.AgentServerMessageSchema,
      "message",
      [
        "interaction_update",
        "exec_server_message",
        "conversation_checkpoint_update",
        "kv_server_message",
        "exec_server_control_message",
        "interaction_query",
      ],
    ],
    [
      exec.ExecServerMessageSchema,
      "message",
      [
        "shell_args",
        "write_args",
        "delete_args",
        "grep_args",
        "read_args",
        "ls_args",
        "diagnostics_args",
        "request_context_args",
        "mcp_args",
        "shell_stream_args",
        "background_shell_spawn_args",
        "fetch_args",
        "write_shell_stdin_args",
        "redacted_read_args",
        "force_background_shell_args",
      ],
    ],
    [
      toolCall.ToolCallSchema,
      "tool",
      [
        "shell_tool_call",
        "delete_tool_call",
        "glob_tool_call",
        "grep_tool_call",
        "read_tool_call",
        "update_todos_tool_call",
        "read_todos_tool_call",
        "edit_tool_call",
        "ls_tool_call",
        "read_lints_tool_call",
        "mcp_tool_call",
        "create_plan_tool_call",
        "web_search_tool_call",
        "ask_question_tool_call",
        "fetch_tool_call",
        "switch_mode_tool_call",
        "write_shell_stdin_tool_call",
        "web_fetch_tool_call",
      ],
    ],
    [
      models.ModelDetailsSchema,
      "credentials",
      ["api_key_credentials", "azure_credentials", "bedrock_credentials"],
    ],
    [query.CreatePlanResultSchema, "result", ["success", "error"]],
  ];
  for (const [schema, oneofName, members] of oneofs) {
    const oneof = schema.oneofs.find((entry) => entry.name === oneofName);
    assert.ok(oneof, `${schema.typeName} has oneof ${oneofName}`);
    assert.deepEqual(
      oneof.fields.map((field) => field.name).sort(),
      [...members].sort(),
      schema.typeName,
    );
  }
  assert.equal(
    agentStream.AgentServerMessageSchema.fields.find((field) => field.name === "ttft_breakdown")
      ?.oneof,
    undefined,
  );
  assert.equal(
    exec.ExecServerMessageSchema.fields.find((field) => field.name === "exec_id")?.oneof,
    undefined,
  );
});

test("enum values match the protocol", () => {
  assert.deepEqual(
    common.file_agent_v1_common.enums
      .find((entry) => entry.name === "AgentMode")
      ?.values.map((value) => [value.name, value.number]),
    [
      ["AGENT_MODE_UNSPECIFIED", 0],
      ["AGENT_MODE_AGENT", 1],
      ["AGENT_MODE_ASK", 2],
      ["AGENT_MODE_PLAN", 3],
      ["AGENT_MODE_DEBUG", 4],
      ["AGENT_MODE_TRIAGE", 5],
      ["AGENT_MODE_PROJECT", 6],
      ["AGENT_MODE_MULTITASK", 7],
      ["AGENT_MODE_CUSTOM", 8],
    ],
  );
  assert.deepEqual(
    [config.Http2Config.FORCE_ALL_DISABLED, config.Http2Config.FORCE_BIDI_ENABLED],
    [1, 4],
  );
  assert.deepEqual([shell.TimeoutBehavior.CANCEL, shell.TimeoutBehavior.BACKGROUND], [1, 2]);
  assert.deepEqual([shell.ShellAbortReason.USER_ABORT, shell.ShellAbortReason.TIMEOUT], [1, 2]);
  assert.deepEqual(
    [
      common.TodoStatus.PENDING,
      common.TodoStatus.IN_PROGRESS,
      common.TodoStatus.COMPLETED,
      common.TodoStatus.CANCELLED,
    ],
    [1, 2, 3, 4],
  );
  assert.deepEqual(
    [update.ThinkingStyle.DEFAULT, update.ThinkingStyle.CODEX, update.ThinkingStyle.GPT5],
    [1, 2, 3],
  );
  const E = errors.ErrorDetails_Error;
  assert.deepEqual(
    [
      E.BAD_API_KEY,
      E.NOT_LOGGED_IN,
      E.BAD_MODEL_NAME,
      E.USER_ABORTED_REQUEST,
      E.TIMEOUT,
      E.CUSTOM_MESSAGE,
      E.OUTDATED_CLIENT,
      E.RATE_LIMITED,
      E.CUSTOM,
      E.PROVIDER_ERROR,
      E.INTERNAL,
    ],
    [1, 2, 5, 21, 25, 29, 30, 50, 52, 57, 59],
  );
});

test("the services carry the documented paths and kinds", () => {
  const agent = agentStream.AgentService.method;
  assert.equal(agentStream.AgentService.typeName, "agent.v1.AgentService");
  assert.equal(agent.run.methodKind, "bidi_streaming");
  assert.equal(agent.runSSE.name, "RunSSE");
  assert.equal(agent.runSSE.methodKind, "server_streaming");
  assert.equal(agent.runSSE.input.typeName, "aiserver.v1.BidiRequestId");
  assert.equal(bidi.BidiService.typeName, "aiserver.v1.BidiService");
  assert.equal(bidi.BidiService.method.bidiAppend.methodKind, "unary");
  assert.equal(agent.nameAgent.name, "NameAgent");
  assert.equal(agent.nameAgent.methodKind, "unary");
  assert.equal(gitText.HealthCheckResponse_Status.HEALTHY, 1);
});
