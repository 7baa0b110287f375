/** The sentence a person sees in their tool: which policy refused, and the policy's own words. */
export function refusalMessage(policyName: string, message: string): string {
  return `Reins policy "${policyName}" denied this request: ${message}`;
}
