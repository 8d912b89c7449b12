// The page behind `rag serve`'s "/": asks the chat-completions endpoint with streaming on, shows the
// answer as it arrives and lists the numbered sources, each opening the passage it cites.
// Everything comes from this server; text is always inserted as text, never as markup.
"use strict";

const $ = (id) => document.getElementById(id);
let model = "rag";

function headers() {
  const result = { "Content-Type": "application/json" };
  const token = $("token").value.trim();
  if (token) result.Authorization = `Bearer ${token}`;
  return result;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = false;
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    return body.error && body.error.message ? body.error.message : `HTTP ${response.status}`;
  } catch (_) {
    return `HTTP ${response.status}`;
  }
}

async function loadHome() {
  const response = await fetch("/v1/models", { headers: headers() });
  if (!response.ok) {
    $("home").textContent = response.status === 401 ? "give the bearer token below" : await errorMessage(response);
    return;
  }
  const body = await response.json();
  const first = body.data[0];
  model = first.id;
  $("home").textContent = first.home ? `${first.home} (model ${first.id})` : `model ${first.id}`;
}

function renderSources(rows) {
  const list = $("sources");
  list.replaceChildren();
  for (const row of rows) {
    const item = document.createElement("li");
    item.value = row.index;
    const open = document.createElement("button");
    open.type = "button";
    open.className = "source";
    const where = row.page != null ? `, page ${row.page}` : "";
    open.textContent = `[${row.index}] ${row.citation || row.source || row.id}${where}`;
    const passage = document.createElement("blockquote");
    passage.hidden = true;
    passage.textContent = row.text;
    open.addEventListener("click", () => { passage.hidden = !passage.hidden; });
    item.append(open, passage);
    list.append(item);
  }
}

// Reads the SSE body: `data: {...}` events separated by blank lines, ending with `data: [DONE]`.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data === "[DONE]") return;
      if (data) onEvent(JSON.parse(data));
    }
    if (done) return;
  }
}

async function ask(event) {
  event.preventDefault();
  $("error").hidden = true;
  $("submit").disabled = true;
  $("answer").textContent = "";
  $("sources").replaceChildren();
  $("result").hidden = false;
  const body = { model, stream: true, messages: [{ role: "user", content: $("question").value }] };
  const filter = $("filter").value.trim();
  if (filter) body.filter = filter;
  try {
    const response = await fetch("/v1/chat/completions", { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (!response.ok) {
      showError(await errorMessage(response));
      $("result").hidden = true;
      return;
    }
    await readEvents(response, (chunk) => {
      if (chunk.error) { showError(chunk.error.message); return; }
      if (chunk.sources) renderSources(chunk.sources);
      const choice = chunk.choices && chunk.choices[0];
      const text = choice && choice.delta ? choice.delta.content : null;
      // The server also streams its sources as text ("\n\nSources: ..."); the list shows them instead.
      if (text && !text.startsWith("\n\nSources:")) $("answer").textContent += text;
    });
  } catch (failure) {
    showError(`the request failed: ${failure}`);
  } finally {
    $("submit").disabled = false;
  }
}

$("ask").addEventListener("submit", ask);
$("token").addEventListener("change", loadHome);
loadHome();
