// Every action, one line each: its folder's entry, exported under its configuration section.
export { actionEntry as approval } from "./approval/entry.js";
export { actionEntry as hooks } from "./hooks/entry.js";
export { actionEntry as kubernetes } from "./kubernetes/entry.js";
