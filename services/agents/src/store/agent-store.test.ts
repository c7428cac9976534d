import { unservedShapes } from '@voiceapi/kit';
import { agentQueryShapes, agentSchema } from './agent-store';
import { jobQueryShapes, jobSchema } from './script-job-store';

it('every query of the agents store has an index that serves it', () => {
  expect(unservedShapes(agentSchema, agentQueryShapes)).toEqual([]);
  expect(unservedShapes(jobSchema, jobQueryShapes)).toEqual([]);
});
