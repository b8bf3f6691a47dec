// The api-versions the simulated IMDS accepts, and which Scheduled Events fields each version carries.

/** Scheduled Events api-versions, oldest first (see the Scheduled Events API notes). */
export const scheduledEventsApiVersions = [
  "2017-03-01",
  "2017-08-01",
  "2017-11-01",
  "2019-01-01",
  "2019-04-01",
  "2019-08-01",
  "2020-07-01",
] as const;
export type ScheduledEventsApiVersion = (typeof scheduledEventsApiVersions)[number];
export const latestScheduledEventsApiVersion: ScheduledEventsApiVersion = "2020-07-01";

/** Instance metadata api-versions (a representative subset of what IMDS accepts). */
export const instanceApiVersions = [
  "2017-03-01",
  "2017-04-02",
  "2017-08-01",
  "2017-10-01",
  "2017-12-01",
  "2018-02-01",
  "2018-04-02",
  "2018-10-01",
  "2019-02-01",
  "2019-03-11",
  "2019-04-30",
  "2019-06-01",
  "2019-06-04",
  "2019-08-01",
  "2019-08-15",
  "2019-11-01",
  "2020-06-01",
  "2020-07-15",
  "2020-09-01",
  "2020-10-01",
  "2020-12-01",
  "2021-01-01",
  "2021-02-01",
  "2021-03-01",
  "2021-05-01",
  "2021-08-01",
  "2021-10-01",
  "2021-11-01",
  "2021-11-15",
  "2021-12-13",
  "2023-07-01",
  "2023-11-15",
] as const;

/** Managed identity token api-versions. */
export const identityApiVersions = ["2018-02-01", "2019-08-01"] as const;

/** The three newest versions, newest first, as IMDS lists them in its api-version error. */
export function newestVersions(versions: readonly string[]): string[] {
  return [...versions].sort().reverse().slice(0, 3);
}

/** What a Scheduled Events document looks like at one api-version. */
export interface DocumentShape {
  /** Before 2017-08-01 resource names carry a leading underscore (`_mysrv`). */
  underscoreResourceNames: boolean;
  hasDescription: boolean;
  hasEventSource: boolean;
  hasDurationInSeconds: boolean;
}

export function documentShapeFor(apiVersion: ScheduledEventsApiVersion): DocumentShape {
  return {
    underscoreResourceNames: apiVersion < "2017-08-01",
    hasDescription: apiVersion >= "2019-04-01",
    hasEventSource: apiVersion >= "2019-08-01",
    hasDurationInSeconds: apiVersion >= "2020-07-01",
  };
}

export function isScheduledEventsApiVersion(value: string): value is ScheduledEventsApiVersion {
  return (scheduledEventsApiVersions as readonly string[]).includes(value);
}
