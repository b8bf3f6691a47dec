export * from "./stryker.config.ts";
export { default } from "./stryker.config.ts";
