import type { PipelineDeps, StepEnv } from './call-context.js';
import type { GovernedCaller } from './caller.js';

/** The sentence a person sees in their tool: which policy refused, and the policy's own words. */
export function refusalMessage(policyName: string, message: string): string {
  return `Reins policy "${policyName}" denied this request: ${message}`;
}

/**
 * Appends what the developer's own latest request for this policy or model says (approvals); a failed lookup adds
 * nothing. No promise when there is nothing to look up.
 */
export function withNote(env: StepEnv<PipelineDeps>, caller: GovernedCaller, message: string, subject: { policy?: string; model?: string }): string | Promise<string> {
  const notes = env.deps.notes;
  if (!caller.developer || !notes) return message;
  return notes.noteFor(caller.developer.id, subject).then(
    (note) => (note ? `${message} ${note}` : message),
    (err: Error) => {
      env.deps.onError?.(err, 'request note');
      return message;
    },
  );
}
