// Preloaded into a child process (`--import`): steps the wall clock (Date) by the offset written in
// SEF_TEST_CLOCK_OFFSET_FILE each time the process gets SIGUSR2. performance.now() and timers are left alone,
// as with a real NTP step.
import { readFileSync } from "node:fs";

const offsetFile = process.env.SEF_TEST_CLOCK_OFFSET_FILE;
const RealDate = Date;
let offsetMs = 0;

class SteppedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offsetMs);
    else super(...args);
  }
  static now() {
    return RealDate.now() + offsetMs;
  }
}
globalThis.Date = SteppedDate;

process.on("SIGUSR2", () => {
  if (offsetFile) offsetMs = Number(readFileSync(offsetFile, "utf8").trim()) || 0;
});
