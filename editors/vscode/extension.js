// Start `pipe lsp` for .pipe files: every feature comes from the language server, this only connects it.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

// The program VS Code starts comes from the user's own settings only: a workspace's .vscode/settings.json is
// written by whoever wrote the workspace (a run, a cloned repository), and must not choose what runs here.
function machineSetting(config, key, fallback) {
  const seen = config.inspect(key) || {};
  return seen.globalValue !== undefined ? seen.globalValue : fallback;
}

function serverOptions(config) {
  return {
    command: machineSetting(config, "server.command", "pipe"),
    args: machineSetting(config, "server.args", ["lsp"]),
    transport: TransportKind.stdio,
  };
}

function activate(context) {
  const server = serverOptions(vscode.workspace.getConfiguration("pipe"));
  client = new LanguageClient("pipe", "Pipe language server", server, {
    documentSelector: [{ scheme: "file", language: "pipe" }, { scheme: "untitled", language: "pipe" }],
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate, serverOptions };
