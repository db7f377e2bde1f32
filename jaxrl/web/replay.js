// The HTML replay's player: the frames drawn pixel for pixel, scaled by a whole number; play, pause, a scrubber
// and speed. `data-shown` on the root is the frame drawn last (tests wait on it).
function jaxrlReplay(ident) {
  const root = document.getElementById(ident);
  const data = JSON.parse(document.getElementById(ident + "-data").textContent);
  const canvas = root.querySelector("canvas"), ctx = canvas.getContext("2d");
  const scale = Math.max(1, Math.floor(data.pixels / Math.max(data.width, data.height)));
  canvas.width = data.width * scale;
  canvas.height = data.height * scale;
  const scrub = root.querySelector(".scrub"), button = root.querySelector(".play");
  const label = root.querySelector(".frame"), caption = root.querySelector(".caption");
  const speed = root.querySelector(".speed");
  const last = data.frames.length - 1;
  scrub.max = String(last);
  for (const fps of [1, 2, 5, 10, 20, 30, 60, 0]) {
    const option = document.createElement("option");
    option.value = String(fps);
    option.textContent = fps ? fps + " steps/s" : "fastest";
    if (fps === data.fps) option.selected = true;
    speed.appendChild(option);
  }
  const images = data.frames.map((src) => {
    const image = new Image();
    image.src = "data:image/png;base64," + src;
    return image;
  });
  let frame = 0, timer = null;

  function draw(i) {
    const image = images[i];
    const paint = () => {
      if (i !== frame) return;  // a later frame was asked for meanwhile
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(image, 0, 0, canvas.width, canvas.height);
      root.dataset.shown = String(i);
    };
    if (image.complete) paint(); else image.addEventListener("load", paint, { once: true });
  }
  function show(i) {
    frame = Math.max(0, Math.min(last, i));
    scrub.value = String(frame);
    label.textContent = (frame + 1) + "/" + (last + 1);
    caption.textContent = data.captions[frame];
    root.dataset.frame = String(frame);
    draw(frame);
  }
  function pause() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    button.textContent = "play";
    root.dataset.playing = "false";
  }
  function tick() {
    if (frame >= last) { pause(); return; }
    show(frame + 1);
    const fps = Number(speed.value);
    timer = setTimeout(tick, fps ? 1000 / fps : 0);
  }
  function play() {
    if (frame >= last) show(0);
    button.textContent = "pause";
    root.dataset.playing = "true";
    tick();
  }
  button.addEventListener("click", () => (timer === null ? play() : pause()));
  scrub.addEventListener("input", () => { pause(); show(Number(scrub.value)); });
  show(0);
  root.jaxrl = { show, play, pause, frames: last + 1 };
}
