#!/usr/bin/env node
// repo-stats: a small MCP server over stdio (newline-delimited JSON-RPC), written
// without an SDK so it runs wherever Node.js does. One tool, line_counts: the lines of
// the repository's text files, by file extension. eve starts it in the workspace
// (connections/stats.toml).
import { createInterface } from "node:readline";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative } from "node:path";

const SKIP = new Set([".git", ".eve", "target", "node_modules", "dist", "build"]);
const MAX_FILE = 1024 * 1024;
const MAX_FILES = 20000;

const tool = {
  name: "line_counts",
  description:
    "Counts the lines of the text files under a folder of the repository, grouped by file extension, largest first. Use it to see what a repository is made of before reading it. Skips .git, target, node_modules, build output and binary files.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "The folder, relative to the repository root (default: the whole repository)." },
      top: { type: "integer", minimum: 1, maximum: 50, description: "How many extensions to list (default 10)." },
    },
    additionalProperties: false,
  },
  annotations: { title: "Line counts", readOnlyHint: true, openWorldHint: false },
};

function lineCounts(root, top) {
  const counts = new Map();
  let files = 0;
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (files >= MAX_FILES) return;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIP.has(entry.name) && !entry.name.startsWith(".")) walk(path);
      } else if (entry.isFile()) {
        if (statSync(path).size > MAX_FILE) continue;
        const bytes = readFileSync(path);
        if (bytes.includes(0)) continue;
        files += 1;
        const ext = extname(entry.name) || "(none)";
        const lines = bytes.length === 0 ? 0 : bytes.toString("utf8").split("\n").length;
        const seen = counts.get(ext) ?? { files: 0, lines: 0 };
        counts.set(ext, { files: seen.files + 1, lines: seen.lines + lines });
      }
    }
  };
  walk(root);
  const rows = [...counts.entries()].sort((a, b) => b[1].lines - a[1].lines).slice(0, top);
  const where = relative(process.cwd(), root) || ".";
  const text = rows.map(([ext, c]) => `${ext}\t${c.lines} lines in ${c.files} files`).join("\n");
  return `${files} text files under ${where}:\n${text}`;
}

function answer(message) {
  const { id, method, params } = message;
  const reply = (result) => ({ jsonrpc: "2.0", id, result });
  switch (method) {
    case "initialize":
      return reply({
        protocolVersion: params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "repo-stats", version: "1.0.0" },
      });
    case "ping":
      return reply({});
    case "tools/list":
      return reply({ tools: [tool] });
    case "tools/call": {
      if (params?.name !== tool.name) {
        return reply({ content: [{ type: "text", text: `no tool ${params?.name}` }], isError: true });
      }
      const args = params.arguments ?? {};
      const root = join(process.cwd(), args.path ?? ".");
      if (relative(process.cwd(), root).startsWith("..")) {
        return reply({ content: [{ type: "text", text: "the path must be inside the repository" }], isError: true });
      }
      return reply({ content: [{ type: "text", text: lineCounts(root, args.top ?? 10) }] });
    }
    default:
      return id === undefined ? null : { jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } };
  }
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const reply = answer(message);
  if (reply) process.stdout.write(JSON.stringify(reply) + "\n");
});
