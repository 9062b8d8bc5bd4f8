/**
 * Prints the gzipped size of every JavaScript file the build ships, and their total; the build
 * fails when the total passes the budget.
 */
import { gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';

export function gzipBudget(options: { maxGzipBytes: number }): Plugin {
  return {
    name: 'bindery-gzip-budget',
    apply: 'build',
    generateBundle(_outputOptions, bundle) {
      let total = 0;
      const lines: string[] = [];
      for (const [fileName, item] of Object.entries(bundle)) {
        if (!fileName.endsWith('.js')) continue;
        const source = item.type === 'chunk' ? item.code : item.source;
        const gzipped = gzipSync(source, { level: 9 }).length;
        total += gzipped;
        lines.push(`  ${fileName}  ${kb(gzipped)} gzipped`);
      }
      const budget = options.maxGzipBytes;
      process.stdout.write(
        `\nconsole JavaScript: ${kb(total)} gzipped (budget ${kb(budget)})\n${lines.join('\n')}\n`,
      );
      if (total > budget) this.error(`the console's JavaScript is ${kb(total)} gzipped, over ${kb(budget)}`);
    },
  };
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
