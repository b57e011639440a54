// The trace viewer page's style (viewer-page.ts puts it in the page): plain CSS, no framework
// and no build step. Wide screens show the tree with its waterfall beside the details panel;
// narrow ones stack them, each span's bar under its name.
export const STYLE = `
:root { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330; background: #f3f5f8; --muted: #5d6676; --line: #e3e7ee; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; }
code, pre, .kind, .ekind, .status { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; }
button { font: inherit; cursor: pointer; }
header { padding: 14px 20px 10px; background: #fff; border-bottom: 1px solid var(--line); }
.title { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; }
.brand { font-weight: 650; font-size: 15px; }
#run-id { font-size: 12px; color: var(--muted); overflow-wrap: anywhere; }
.badge { font: 600 12px ui-monospace, monospace; padding: 2px 8px; border-radius: 10px; background: #e8ebf1; }
.badge.RUNNING, .badge.QUEUED { background: #dde9ff; color: #1f4fa8; } .badge.SUCCEEDED { background: #dcf3e3; color: #1d6b39; }
.badge.FAILED { background: #fde2df; color: #a3261b; } .badge.TIMED_OUT, .badge.CANCELLED { background: #fff0cf; color: #7a5300; }
.badge.WAITING { background: #efe3fb; color: #5f2d91; } .badge.PAUSED { background: #eceff3; color: #3d4654; }
#question { margin: 8px 0 6px; white-space: pre-wrap; max-height: 4.4em; overflow: hidden; overflow-wrap: anywhere; font-size: 15px; }
.facts { display: flex; gap: 4px 18px; flex-wrap: wrap; color: var(--muted); font-size: 13px; }
.facts b { color: #1d2330; font-weight: 600; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; background: #b8bfcc; margin-right: 5px; }
body[data-connection=live] .dot { background: #2f9e57; } body[data-connection=reconnecting] .dot { background: #d89a16; }
body[data-connection=refused] .dot { background: #c8372b; }
.banner { margin: 10px 0 0; padding: 8px 12px; border-radius: 6px; border-left: 4px solid; display: flex; flex-direction: column; gap: 4px; overflow-wrap: anywhere; }
.banner.bad { background: #fdeceb; border-color: #c8372b; color: #6e1a13; } .banner.bad b { color: #a3261b; margin-right: 8px; }
#failure { flex-direction: row; flex-wrap: wrap; align-items: baseline; gap: 4px 10px; font-size: 15px; }
#failure code { background: #f9d3cf; padding: 1px 6px; border-radius: 4px; font-size: 13px; }
.banner.warn { background: #fff6e0; border-color: #d89a16; color: #5a4100; }
.banner.wait { background: #f6effd; border-color: #7d45b5; color: #3f1f61; }
.waiting-call { cursor: pointer; display: flex; flex-wrap: wrap; gap: 2px 10px; } .waiting-call .args { font: 12px ui-monospace, monospace; }
.waiting-call .expires { color: var(--muted); font-size: 12px; }
.waiting-call .args-warning { flex-basis: 100%; color: #8f1d1d; font-size: 13px; }
/* Text a person approves reads in the order it is stored, whatever its letters' direction, with its spaces as they are
   ("a  b" never reads "a b"); a one-line preview in the tree keeps them too, without wrapping (visibleEl). */
.as-stored { direction: ltr; unicode-bidi: bidi-override; white-space: pre-wrap; overflow-wrap: anywhere; } .label .as-stored { white-space: pre; }
.mixed-script { color: #8f1d1d; background: #fff0c2; text-decoration: underline wavy #c8372b; cursor: help; }
.hidden-char { font: 11px ui-monospace, monospace; color: #8f1d1d; background: #ffe1dc; border: 1px solid #e8a59b; border-radius: 3px; padding: 0 2px; }
.blank-run { font: 11px ui-monospace, monospace; color: #5a4100; background: #fff0c2; border: 1px dashed #d89a16; border-radius: 3px; padding: 0 2px; }
.args-flag { color: #a3261b; margin-right: 4px; cursor: help; } .pevent .hint, .pevent .args-warning { display: block; font-size: 12px; } .pevent .args-warning { color: #8f1d1d; }
.decide { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; cursor: default; }
.decide button, .stop, .pause { border: 1px solid; border-radius: 5px; padding: 1px 10px; background: #fff; }
.decide .approve { border-color: #2f9e57; color: #1d6b39; } .decide .reject, .stop { border-color: #c8372b; color: #a3261b; }
.decide .reason { font: inherit; font-size: 13px; padding: 1px 6px; border: 1px solid var(--line); border-radius: 5px; min-width: 0; width: 16em; max-width: 100%; }
button:disabled, input:disabled { opacity: 0.55; cursor: default; }
.interruption { cursor: pointer; } .interruption b { margin-right: 8px; } .interruption .outcome { font-weight: 600; margin-right: 8px; }
#message { color: #a8321f; margin: 8px 0 0; }
main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(300px, 400px); gap: 16px; padding: 14px 20px 24px; align-items: start; }
.trace, #panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; min-width: 0; }
#panel { position: sticky; top: 12px; max-height: calc(100vh - 24px); overflow: auto; padding: 12px 14px; }
.row { display: grid; grid-template-columns: minmax(0, 1fr) 60px 170px minmax(140px, 30%); column-gap: 10px; align-items: center;
  min-height: 28px; padding: 0 12px; border-bottom: 1px solid #f0f2f6; }
.axis { position: sticky; top: 0; z-index: 1; background: #f8f9fb; color: var(--muted); font-size: 11px; min-height: 30px; border-radius: 8px 8px 0 0; }
.axis .lane { background: none; height: 30px; }
.tick-label { position: absolute; top: 8px; transform: translateX(-50%); white-space: nowrap; font-variant-numeric: tabular-nums; }
.tick-label.first { transform: none; } .tick-label.last { transform: translateX(-100%); }
.span-row { cursor: pointer; } .span-row:hover { background: #f5f8fd; }
.span-row.selected { background: #e6efff; box-shadow: inset 3px 0 #3a74e0; }
.span-row:focus-visible { outline: 2px solid #3a74e0; outline-offset: -2px; }
.label { display: flex; align-items: center; gap: 6px; min-width: 0; white-space: nowrap; overflow: hidden; }
.toggle { flex: none; width: 18px; height: 18px; padding: 0; border: 0; background: none; color: var(--muted); font-size: 12px; border-radius: 4px; }
button.toggle:hover { background: #e3e8f1; }
.kind { flex: none; font-size: 10.5px; padding: 1px 6px; border-radius: 4px; background: #e6e9ef; color: #3b4455; }
.kind.RUN { background: #dfe7f7; } .kind.ATTEMPT { background: #e4e1fb; } .kind.TURN { background: #eceef2; }
.kind.MODEL_CALL { background: #d9f2e4; color: #1d5c37; } .kind.TOOL_CALL, .kind.MCP_CALL { background: #ffedd1; color: #7a4a00; }
.kind.COMPACTION, .kind.SPILL, .kind.SKILL_LOAD { background: #f1e2fb; color: #5d2a82; }
.name { flex: 0 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; font-weight: 500; }
.status { flex: none; font-size: 10.5px; color: #2d7a45; }
.status.RUNNING { color: #1f5fd0; } .status.ERROR { color: #fff; background: #c8372b; padding: 0 5px; border-radius: 3px; }
.status.INTERRUPTED { color: #5a4100; background: #ffd98a; padding: 0 5px; border-radius: 3px; } .status.CANCELLED { color: #5d6676; }
.note { flex: 0 1000 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; font-size: 11.5px; padding: 0 6px; border-radius: 3px; } .note.warn { background: #fff0cf; color: #6b4c00; }
.note.bad { background: #fde2df; color: #a3261b; font-weight: 600; }
.dur, .tok { text-align: right; font-size: 12px; color: #3b4455; font-variant-numeric: tabular-nums; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.tok.below { color: #8a92a1; }
.axis .dur, .axis .tok { color: var(--muted); font-size: 11px; } .axis .tok { white-space: normal; line-height: 1.25; }
.event-row > .label { grid-column: 1 / 4; }
.lane { position: relative; height: 18px; background: linear-gradient(90deg, #eef0f4 1px, transparent 1px) 0 0 / 25% 100%; }
.bar { position: absolute; left: calc(var(--s, 0) * 100% / var(--axis, 1)); width: calc(var(--d, 0) * 100% / var(--axis, 1)); top: 4px; height: 10px; min-width: 2px; border-radius: 3px; background: #8ea3c8; }
.bar.ATTEMPT { background: #a59ce8; } .bar.TURN { background: #b6bfcd; } .bar.MODEL_CALL { background: #3fae6a; }
.bar.TOOL_CALL, .bar.MCP_CALL { background: #f0a23b; } .bar.COMPACTION, .bar.SPILL, .bar.SKILL_LOAD { background: #b07ad8; }
.bar.ERROR { background: #d9473a; } .bar.CANCELLED { background: #a7adb8; }
.bar.INTERRUPTED { background: repeating-linear-gradient(135deg, #e9b949 0 4px, #f6d88f 4px 8px); }
.bar.RUNNING { background-image: repeating-linear-gradient(135deg, rgba(255,255,255,.45) 0 5px, transparent 5px 10px); background-size: 28px 10px; animation: run 0.8s linear infinite; }
@keyframes run { to { background-position: 28px 0; } }
.event-row { min-height: 24px; font-size: 12.5px; color: #39414f; cursor: pointer; } .event-row:hover { background: #f7f8fb; }
.event-row .lane { background: none; }
.output-row > .label { grid-column: 1 / -1; align-items: flex-start; } .output-row .ekind { color: #1d6b39; }
.output-row .output-note { color: #5b6b60; font-size: 12px; white-space: nowrap; }
.output-row pre.output { margin: 0; min-width: 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12.5px; color: #14401f; }
.tick { position: absolute; left: calc(var(--s, 0) * 100% / var(--axis, 1)); top: 5px; width: 7px; height: 7px; transform: translateX(-50%) rotate(45deg); background: #8a92a1; }
.ekind { flex: none; font-size: 10.5px; color: #6a4fb3; min-width: 64px; }
.preview { min-width: 0; overflow: hidden; text-overflow: ellipsis; }
.event-row.FINAL_REPLY { background: #edf9f1; } .event-row.FINAL_REPLY .ekind { color: #1d6b39; font-weight: 700; }
.event-row.FINAL_REPLY .preview { color: #14401f; font-weight: 500; } .event-row.FINAL_REPLY .tick { background: #2f9e57; }
.event-row.STEERED { background: #eef3ff; } .event-row.STEERED .ekind { color: #2f5fc4; font-weight: 700; } .event-row.STEERED .tick { background: #3a74e0; }
.event-row.ERROR { background: #fdeeed; } .event-row.ERROR .ekind, .event-row.ERROR .preview { color: #a3261b; } .event-row.ERROR .tick { background: #c8372b; }
.event-row.INTERRUPTION, .event-row.aborted { background: #fff7e3; } .event-row.INTERRUPTION .ekind, .event-row.aborted .ekind,
.event-row.aborted .preview { color: #7a5300; } .event-row.aborted .tick, .event-row.INTERRUPTION .tick { background: #d89a16; }
.gauge { display: inline-flex; align-items: center; gap: 8px; min-width: 0; font-size: 11.5px; color: var(--muted); }
.gauge b { color: #1d2330; font-weight: 600; font-variant-numeric: tabular-nums; }
.meter { flex: none; position: relative; width: 96px; height: 8px; border-radius: 4px; background: #e3e7ee; overflow: hidden; }
.meter .fill { position: absolute; left: 0; top: 0; bottom: 0; background: #5b8def; } .meter.warn .fill { background: #e0a423; }
.meter.over .fill { background: #d9473a; } .meter .mark { position: absolute; top: 0; bottom: 0; width: 2px; margin-left: -1px; background: #1d2330; }
.gauge-text { overflow: hidden; text-overflow: ellipsis; }
#answer-box { padding: 12px; border-top: 1px solid var(--line); } #answer-box h2 { font-size: 14px; margin: 0 0 6px; color: #1d6b39; }
#answer { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; background: #f6fbf7; border: 1px solid #cfe9d8; border-radius: 6px; padding: 10px; font-size: 13px; }
.hint { color: var(--muted); margin: 4px 0; }
.panel-head { display: flex; align-items: flex-start; gap: 8px; }
.panel-head h2 { flex: 1; font-size: 14px; margin: 0; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; overflow-wrap: anywhere; }
.close { border: 0; background: none; font-size: 18px; line-height: 1; color: var(--muted); padding: 0 4px; }
.panel-facts { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: 2px 12px; margin: 10px 0; font-size: 12.5px; }
.panel-facts dt { color: var(--muted); } .panel-facts dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.callout { padding: 8px 10px; border-radius: 6px; margin: 8px 0; font-size: 13px; overflow-wrap: anywhere; }
.callout.bad { background: #fdeceb; color: #6e1a13; } .callout.warn { background: #fff6e0; color: #5a4100; }
#panel h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 14px 0 6px; }
.attributes { width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 12px; }
.attributes th { text-align: left; font-weight: 500; color: var(--muted); width: 40%; padding: 3px 8px 3px 0; vertical-align: top; overflow-wrap: anywhere; }
.attributes td { padding: 3px 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.attributes tr + tr { border-top: 1px solid #f0f2f6; }
.request p { font-size: 12.5px; margin: 8px 0 4px; }
.messages { display: flex; flex-direction: column; gap: 6px; }
.message { border-left: 3px solid #c4cede; padding-left: 8px; } .message .role { font: 600 10.5px ui-monospace, monospace; color: var(--muted); }
.message.system { border-color: #a59ce8; } .message.user { border-color: #5b8def; } .message.assistant { border-color: #3fae6a; }
.message.tool { border-color: #f0a23b; } .message pre.payload { max-height: 200px; }
.pevent { border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; margin: 6px 0; }
.pevent.focused { border-color: #3a74e0; box-shadow: 0 0 0 2px #d5e3ff; }
.pevent.ERROR { border-color: #f2c1bc; } .pevent.INTERRUPTION { border-color: #f0d48e; } .pevent.FINAL_REPLY { border-color: #bfe3cb; } .pevent.STEERED { border-color: #c5d6fb; }
.pevent-head { display: flex; gap: 10px; font-size: 11.5px; color: var(--muted); margin-bottom: 4px; } .pevent-head .size { margin-left: auto; }
pre.preview, pre.payload { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; max-height: 320px; overflow: auto; }
pre.payload { background: #f8f9fb; border-radius: 4px; padding: 6px; }
.load { margin-top: 6px; font-size: 12px; padding: 3px 10px; border: 1px solid #c4cede; border-radius: 5px; background: #f6f8fc; color: #1f4fa8; }
.load:hover { background: #e8eefb; }
@media (max-width: 820px) {
  header { padding: 12px 12px 8px; }
  main { grid-template-columns: minmax(0, 1fr); padding: 10px 8px 20px; gap: 10px; }
  #panel { position: static; max-height: none; }
  .row { grid-template-columns: minmax(0, 1fr) auto; grid-template-areas: "label dur" "tok tok" "lane lane"; padding: 3px 8px; }
  .row > .label { grid-area: label; } .row > .dur { grid-area: dur; } .row > .tok { grid-area: tok; text-align: left; } .row > .lane { grid-area: lane; }
  .tok:not(:empty)::before { content: "tokens in/out/cached/reasoning "; color: #8a92a1; }
  .row > .tok { font-size: 11px; } .event-row.BUDGET .label { white-space: normal; } .gauge { flex-wrap: wrap; row-gap: 0; }
  .lane { height: 14px; } .bar { top: 3px; height: 8px; }
  .axis > .label, .axis > .dur, .axis > .tok, .event-row > .lane { display: none; }
  .event-row > .label { grid-column: 1 / 3; }
}
`;
