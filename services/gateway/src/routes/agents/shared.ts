// Helpers of the inbound agents' route groups (the agents themselves, their lifecycle): the agent's 404.
export const AGENT_404 = { 404: 'No such agent for this tenant (`not_found`)' };
