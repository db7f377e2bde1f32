// The play page: draws the env's own picture of each step, sends keys and settings. The game runs on the server.
"use strict";
const $ = (id) => document.getElementById(id);
const KEYS = {
  ArrowUp: "up", ArrowRight: "right", ArrowDown: "down", ArrowLeft: "left",
  w: "up", d: "right", s: "down", a: "left",
};
const state = { hello: null, frame: null, frames: 0, moves: [], person: false, running: true, errors: [], saved: null,
  geometry: { ring: 8, scale: 1 } };
window.jaxrlPlay = state;  // tests read it
const protocol = location.protocol === "https:" ? "wss:" : "ws:";
const ws = new WebSocket(protocol + "//" + location.host + "/ws");
state.ws = ws;
const offscreen = document.createElement("canvas");

function send(message) { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message)); }

function draw(frame) {
  const canvas = $("canvas"), ctx = canvas.getContext("2d");
  const longest = Math.max(frame.width, frame.height);
  const scale = Math.max(1, Math.floor(480 / longest)), ring = Math.max(6, Math.min(scale, 12));
  state.geometry = { ring, scale };
  const width = frame.width * scale + 2 * ring, height = frame.height * scale + 2 * ring;
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  const bytes = Uint8Array.from(atob(frame.pixels), (c) => c.charCodeAt(0));
  const image = new ImageData(frame.width, frame.height);
  for (let i = 0, j = 0; i < bytes.length; i += 3, j += 4) {
    image.data[j] = bytes[i]; image.data[j + 1] = bytes[i + 1]; image.data[j + 2] = bytes[i + 2]; image.data[j + 3] = 255;
  }
  offscreen.width = frame.width; offscreen.height = frame.height;
  offscreen.getContext("2d").putImageData(image, 0, 0);
  const wall = state.hello ? state.hello.wall : [110, 110, 110];
  ctx.fillStyle = `rgb(${wall[0]}, ${wall[1]}, ${wall[2]})`;  // beyond the board: a wall
  ctx.fillRect(0, 0, width, height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(offscreen, ring, ring, frame.width * scale, frame.height * scale);
}

function showStatus(frame) {
  const s = frame.status, lines = [`game ${frame.game}  seed ${frame.seed}  step ${s.step}` +
    ("seat" in s ? `  (seat ${s.seat}'s figures)` : "")];
  const figures = [];
  if ("score" in s) figures.push(`${"seat" in s ? "length" : "score"} ${Number(s.score.toFixed(2))}`);
  figures.push(`return ${s.return.toFixed(2)}`);
  if ("placement" in s) figures.push(`placement ${Number(s.placement.toFixed(2))}`);
  lines.push(figures.join("  "));
  lines.push(frame.person ? "you are playing" + ("you" in s ? ` (seat ${s.you})` : "") : "watching");
  $("status").textContent = lines.join("\n");
  $("result").textContent = s.over ? "game over: " + (s.result || "") + " — N for a new game" : "";
  const rows = s.seats.filter((seat) => seat.colour !== undefined || s.seats.length > 1).map((seat, k) => {
    const swatch = seat.colour ? `<span class="swatch" style="background: rgb(${seat.colour.join(",")})"></span>` : "";
    const length = seat.length !== undefined ? `length ${seat.length}` : "";
    const out = seat.alive === false ? ` out, place ${seat.placement}` : "";
    const cls = seat.alive === false ? "dead" : "";
    return `<tr class="${cls}"><td>${swatch}</td><td>${k}</td><td>${escape(seat.name)}</td><td>${length}${out}</td></tr>`;
  });
  $("seats").innerHTML = rows.join("");
}

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function showReadout(frame) {
  const r = frame.readout, box = $("readout");
  if (!r) { box.style.display = "none"; return; }
  box.style.display = "";
  const hint = $("hint").checked || !frame.person;
  box.querySelector(".heading").textContent =
    `${r.who} at seat ${r.seat}: ${r.kind === "probabilities" ? "action probabilities" : "Q-values"}`;
  const top = Math.max(...r.numbers.map(Math.abs), 1e-9);
  $("bars").innerHTML = r.names.map((name, i) => {
    const width = Math.round(140 * Math.abs(r.numbers[i]) / (r.kind === "probabilities" ? 1 : top));
    const best = hint && i === r.best ? " best" : "";
    return `<div class="bar${best}"><span class="name">${escape(name)}</span><span class="fill" style="width:${width}px"></span>` +
      `<span>${r.numbers[i].toFixed(3)}</span></div>`;
  }).join("");
  $("value").textContent = `value estimate ${r.value.toFixed(3)}` + (hint ? `   suggests: ${r.names[r.best]}` : "");
}

function showButtons() {
  $("play").classList.toggle("on", state.person);
  $("watch").classList.toggle("on", !state.person);
  $("play").disabled = state.hello && !state.hello.can_play;
  $("pause").textContent = state.running ? "pause (space)" : "resume (space)";
}

ws.addEventListener("open", () => { $("connection").textContent = "connected"; });
ws.addEventListener("close", () => { $("connection").textContent = "disconnected: reload the page"; });
ws.addEventListener("message", (event) => {
  const message = JSON.parse(event.data);
  if (message.type === "hello") {
    state.hello = message;
    state.person = message.person;
    $("title").textContent = `jaxrl play: ${message.target} on ${message.env}` + (message.versus ? ` vs ${message.versus}` : "");
    $("speed").value = String(message.fps > 0 ? message.fps : 60);
    $("fastest").checked = message.fps === 0;
    $("speed-label").textContent = `${$("speed").value} steps/s`;
    $("seed").value = String(message.seed);
    showButtons();
  } else if (message.type === "frame") {
    if (!state.frame || state.frame.game !== message.game) state.moves = [];
    if (message.last_action !== null) state.moves.push(message.last_action);  // this game's actions, for tests
    state.frame = message; state.frames += 1; state.person = message.person;  // running: from paused / resumed, which a frame in flight may pass
    draw(message); showStatus(message); showReadout(message); showButtons();
    $("canvas").dataset.step = String(message.status.step);
    $("canvas").dataset.game = String(message.game);
  } else if (message.type === "paused" || message.type === "resumed") {
    state.running = message.type === "resumed"; showButtons();
  } else if (message.type === "saved") {
    state.saved = message;
    $("saved").textContent = `saved ${message.episode}`;
  } else if (message.type === "error") {
    state.errors.push(message.message);
    $("error").textContent = message.message;
  }
});

function newGame(person, seed) {
  state.person = person;
  send({ type: "new", person, seed: seed === undefined ? null : seed });
  if (!state.running) { state.running = true; send({ type: "resume" }); }
}

function relativeMove(key) {
  if (key === "left") return "turn_left";
  if (key === "right") return "turn_right";
  return key === "up" ? "straight" : null;
}

document.addEventListener("keydown", (event) => {
  if (event.target.tagName === "INPUT" && event.target.type === "number") return;
  const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
  const move = KEYS[key];
  if (move && state.person) {
    const relative = $("keys").value === "relative" && Boolean(state.hello && state.hello.turns);
    const sent = relative ? relativeMove(move) : move;
    if (sent) send({ type: "move", move: sent });
    event.preventDefault();
    return;
  }
  if (state.person && (key === "e" || key === "c")) { send({ type: "move", move: "collect" }); return; }
  if (key === " ") { send({ type: state.running ? "pause" : "resume" }); event.preventDefault(); }
  else if (key === ".") send({ type: "step" });
  else if (key === "n" || key === "Enter") newGame(state.person);
  else if (key === "p") newGame(true);
  else if (key === "v" || key === "Escape") newGame(false);
  else if (key === "h") { $("hint").checked = !$("hint").checked; if (state.frame) showReadout(state.frame); }
  else if (key === "k") send({ type: "save" });
});

$("watch").addEventListener("click", () => newGame(false));
$("play").addEventListener("click", () => newGame(true));
$("pause").addEventListener("click", () => send({ type: state.running ? "pause" : "resume" }));
$("step").addEventListener("click", () => send({ type: "step" }));
$("new").addEventListener("click", () => newGame(state.person));
$("play-seed").addEventListener("click", () => newGame(state.person, Math.max(0, Math.floor(Number($("seed").value) || 0))));
$("save").addEventListener("click", () => send({ type: "save" }));
$("hint").addEventListener("change", () => { if (state.frame) showReadout(state.frame); });
function speed() {
  const fps = $("fastest").checked ? 0 : Number($("speed").value);
  $("speed-label").textContent = fps ? `${fps} steps/s` : "as fast as it goes";
  send({ type: "speed", fps });
}
$("speed").addEventListener("input", speed);
$("fastest").addEventListener("change", speed);
