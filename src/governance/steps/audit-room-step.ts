import type { CallContext, PipelineDeps, StepEnv, StepResult } from '../call-context.js';

/** A full audit queue slows intake down instead of losing events; no promise when there is room. */
export function auditRoomStep<Call, D extends PipelineDeps>(_ctx: CallContext<Call, D>, env: StepEnv<D>): StepResult {
  const room = env.deps.audit.ready();
  return room ? room.then(() => undefined) : undefined;
}
