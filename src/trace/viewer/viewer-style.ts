// The trace viewer page's style (viewer-page.ts puts it in the page): plain CSS, no framework
// and no build step.
export const STYLE = `
:root { font: 14px/1.45 system-ui, sans-serif; color: #1d2330; background: #f7f8fa; }
header { padding: 12px 20px; background: #fff; border-bottom: 1px solid #dde1e8; position: sticky; top: 0; }
h1 { font-size: 16px; margin: 0 0 6px; } h1 code { font-size: 12px; color: #5b6474; }
.facts { display: flex; gap: 18px; flex-wrap: wrap; color: #5b6474; } .facts b { color: #1d2330; }
#question { margin: 6px 0 0; white-space: pre-wrap; max-height: 4.5em; overflow: hidden; }
#message { color: #a8321f; margin: 6px 0 0; }
main { padding: 12px 20px; }
.span { margin: 2px 0 2px 0; }
.span .children { margin-left: 18px; border-left: 1px dashed #c9ced8; padding-left: 8px; }
.row { display: flex; gap: 8px; align-items: baseline; padding: 2px 4px; border-radius: 4px; }
.row:hover { background: #eef1f6; }
.kind { font: 11px ui-monospace, monospace; padding: 0 5px; border-radius: 3px; background: #e3e7ef; }
.kind.RUN { background: #dfe9ff; } .kind.TURN { background: #ececec; } .kind.MODEL_CALL { background: #e6f6e6; }
.kind.TOOL_CALL { background: #fff1d6; } .kind.COMPACTION, .kind.SPILL { background: #f3e3ff; }
.name { font-weight: 500; }
.status { font-size: 11px; } .status.RUNNING { color: #1f62d0; } .status.OK { color: #2a7a2a; }
.status.ERROR { color: #b3261e; } .status.CANCELLED { color: #8a6d00; }
.duration, .tokens { color: #5b6474; font-variant-numeric: tabular-nums; font-size: 12px; }
.event { display: flex; gap: 8px; margin: 1px 0 1px 22px; font-size: 12px; color: #39414f; }
.event .ekind { font: 11px ui-monospace, monospace; color: #6a4fb3; min-width: 90px; }
.event .preview { white-space: pre-wrap; word-break: break-word; max-height: 2.9em; overflow: hidden; }
.event.open .preview { max-height: none; }
#answer-box { padding: 0 20px 20px; } #answer { white-space: pre-wrap; background: #fff; border: 1px solid #dde1e8; padding: 10px; }
`;
