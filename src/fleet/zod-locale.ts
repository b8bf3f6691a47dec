// zod/mini loads no locale: every module of the fleet that builds schemas imports this one, which sets zod's English
// messages once (configuration problems and record rejections quote them). English alone, from its own file.
import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";

z.config(en());
