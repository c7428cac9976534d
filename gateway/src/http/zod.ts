import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// One zod instance with `.openapi()`: the schemas that validate requests also document them.
extendZodWithOpenApi(z);

export { z };
