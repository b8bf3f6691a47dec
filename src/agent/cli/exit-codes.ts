// The exit codes of every sef command (a module of its own: `sef --version` loads it without the config modules).
/**
 * Exit codes: 0 clean stop, 2 bad configuration (also a taken metrics port), 75 data directory in use by another sef
 * (EX_TEMPFAIL: it may free up), 78 store unusable (a supervisor should not restart in a loop), 1 anything unexpected.
 */
export const exitCodes = { ok: 0, config: 2, dataDirInUse: 75, store: 78, fatal: 1 } as const;

export const exitCodesHelp =
  "Exit codes: 0 stopped cleanly, 2 invalid configuration (or the metrics port is taken), 75 data directory in use by another sef, 78 store unusable, 1 unexpected failure.";
