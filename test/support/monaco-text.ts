// What a Monaco editor on a page (GraphiQL's) shows, line by line: Monaco draws only the lines in
// view, so the editor is scrolled from its top to its end, half a view at a time (through the
// Monaco instance GraphiQL's page holds), and each line drawn is kept at its place in the text.
import type { Page } from "playwright-core";

/** Every line of the text the editor inside `container` shows, in order. */
export function drawnEditorText(page: Page, container: string): Promise<string> {
  return page.evaluate(async (selector) => {
    type Editor = { getDomNode(): HTMLElement | null; setScrollTop(top: number): void; getScrollTop(): number; getScrollHeight(): number };
    const monaco = (window as unknown as { __MONACO: { editor: { getEditors(): Editor[] } } }).__MONACO;
    const editor = monaco.editor.getEditors().find((candidate) => candidate.getDomNode()?.closest(selector))!;
    const node = editor.getDomNode()!;
    const drawn = () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const lines = new Map<number, string>();
    for (let top = 0; ; top += node.clientHeight / 2) {
      editor.setScrollTop(top);
      await drawn();
      for (const line of node.querySelectorAll<HTMLElement>(".view-line"))
        lines.set(Number.parseFloat(line.style.top), (line.textContent ?? "").replace(/\u00a0/g, " "));
      if (editor.getScrollTop() + node.clientHeight >= editor.getScrollHeight()) break;
    }
    return [...lines.entries()]
      .sort((x, y) => x[0] - y[0])
      .map(([, text]) => text)
      .join("\n");
  }, container);
}
