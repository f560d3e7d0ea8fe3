// The official JS client against BeamWeaver's /lg, unchanged: create a thread, wait to the
// interrupt, try to answer it as the requester (refused: nobody approves their own run),
// answer it as a reviewer with a streamed resume, and stream to the end. Prints one JSON
// object with what it saw; tests/protocol/test_js_sdk.py asserts on it.
import { Client } from "@langchain/langgraph-sdk";


async function main() {
  const url = process.env.LG_URL;
  const requester = new Client({ apiUrl: url, apiKey: process.env.LG_REQUESTER_TOKEN });
  const reviewer = new Client({ apiUrl: url, apiKey: process.env.LG_REVIEWER_TOKEN });

  const thread = await requester.threads.create({ metadata: { from: "js" } });
  const paused = await requester.runs.wait(thread.thread_id, "mailer", {
    input: { messages: [{ type: "human", content: "mail a" }] },
  });
  const state = await requester.threads.get(thread.thread_id);

  const approve = { decisions: [{ type: "approve" }] };
  let ownStatus = null;
  try {
    await requester.runs.wait(thread.thread_id, "mailer", { command: { resume: approve } });
  } catch (error) {
    ownStatus = error.status ?? null;
  }

  const events = [];
  for await (const part of reviewer.runs.stream(thread.thread_id, "mailer", {
    command: { resume: approve },
    streamMode: ["values", "updates"],
  })) {
    events.push([part.event, part.data ?? null]);
  }
  const done = await reviewer.threads.get(thread.thread_id);

  console.log(
    JSON.stringify({
      thread: { id: thread.thread_id, metadata: thread.metadata },
      paused,
      pausedStatus: state.status,
      ownStatus,
      events,
      doneStatus: done.status,
      doneValues: done.values,
    }),
  );
}

main().catch((error) => {
  console.error(`failed: ${error?.status ?? ""} ${error?.message ?? error}`);
  process.exit(1);
});
