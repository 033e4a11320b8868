import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/ts/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two cores: run test files two at a time.
    maxWorkers: 2,
  },
});
