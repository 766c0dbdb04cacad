// Tokenize files with a TextMate grammar the way VS Code does (vscode-textmate + vscode-oniguruma).
// usage: node tokenize.js GRAMMAR.json FILE...   prints {"FILE": [[[start, end, [scopes...]], ...] per line], ...}
// The npm packages are found through NODE_PATH (tests/test_editor_grammar.py installs them in a cache folder).
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

async function main() {
  const [grammarPath, ...files] = process.argv.slice(2);
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath),
  });
  const grammar = await registry.loadGrammar("source.pipe");
  const out = {};
  for (const file of files) {
    let stack = vsctm.INITIAL;
    out[file] = fs.readFileSync(file, "utf8").split(/\r?\n/).map((line) => {
      const result = grammar.tokenizeLine(line, stack);
      stack = result.ruleStack;
      return result.tokens.map((t) => [t.startIndex, t.endIndex, t.scopes]);
    });
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => { console.error(err); process.exit(1); });
