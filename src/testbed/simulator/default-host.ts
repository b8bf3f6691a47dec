// The address the simulator binds when none is given: a plain constant, apart from the server so that a command line
// can show it without loading the simulator.
export const defaultSimulatorHost = "127.0.0.1";
