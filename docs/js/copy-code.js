// Copying a console session (">>> " prompts and their output) copies only the code, without prompts,
// so what lands on the clipboard runs as it is. Other blocks are copied unchanged.
document.addEventListener("copy", function (event) {
  var selection = document.getSelection();
  if (!selection || selection.rangeCount === 0) return;
  var node = selection.anchorNode;
  var element = node && (node.nodeType === 1 ? node : node.parentElement);
  if (!element || !element.closest(".highlight")) return;
  var lines = selection.toString().split("\n");
  if (!lines.some(function (line) { return line.startsWith(">>> "); })) return;
  var code = [];
  lines.forEach(function (line) {
    if (line.startsWith(">>> ") || line.startsWith("... ")) code.push(line.slice(4));
    else if (line === ">>>" || line === "...") code.push("");
  });
  event.clipboardData.setData("text/plain", code.join("\n") + "\n");
  event.preventDefault();
});
