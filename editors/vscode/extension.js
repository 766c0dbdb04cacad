// Start `pipe lsp` for .pipe files: every feature comes from the language server, this only connects it.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("pipe");
  const server = {
    command: config.get("server.command", "pipe"),
    args: config.get("server.args", ["lsp"]),
    transport: TransportKind.stdio,
  };
  client = new LanguageClient("pipe", "Pipe language server", server, {
    documentSelector: [{ scheme: "file", language: "pipe" }, { scheme: "untitled", language: "pipe" }],
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
