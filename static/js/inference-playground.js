// The playground: send the conversation, append the streamed answer as its chunks arrive.
(function () {
  const root = document.getElementById("playground");
  if (!root) return;
  const url = root.dataset.streamUrl;
  const token = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  const conversation = document.getElementById("conversation");
  const form = document.getElementById("prompt-form");
  const messages = [];

  function bubble(role, text) {
    const item = document.createElement("div");
    item.className = "message message-" + role;
    item.dataset.role = role;
    item.textContent = text;
    conversation.appendChild(item);
    return item;
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    const prompt = document.getElementById("prompt");
    const text = prompt.value.trim();
    if (!text) return;
    prompt.value = "";
    messages.push({ role: "user", content: text });
    bubble("user", text);
    const answer = bubble("assistant", "");
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": token },
      body: JSON.stringify({ messages: messages, max_tokens: Number(document.getElementById("max-tokens").value) }),
    });
    if (!response.ok) {
      const error = await response.json().catch(() => ({ message: response.statusText }));
      answer.textContent = (error.code ? error.code + ": " : "") + error.message;
      answer.classList.add("message-error");
      messages.pop();
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      answer.textContent += decoder.decode(value, { stream: true });
    }
    messages.push({ role: "assistant", content: answer.textContent });
  });
})();
