/** The real Claude Code through Reins on PostgreSQL: see claude-code-suite.ts (one file per store, for the per-file time limit). */
import { claudeCodeSuite } from './claude-code-suite.js';

claudeCodeSuite('postgres');
