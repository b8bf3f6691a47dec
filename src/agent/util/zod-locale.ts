// zod/mini loads no locale, so every issue would read a bare "Invalid input". Configuration problems, `sef fleet` and
// the fleet's record rejections quote zod's messages: each module that builds schemas imports this one, which sets
// zod's English messages once (the locale classic zod installs by default), whichever entry point runs. English is
// imported from its own file: `z.locales.en()` would bundle every locale, and `zod/locales` loads them all unbundled.
import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";

z.config(en());
