// dicom-parser is a UMD bundle: bundlers and Node's ESM loader expose it either as named exports or as
// a default export holding them. This module gives the rest of core one shape.
import * as ns from 'dicom-parser';

/** The dicom-parser API, whichever way the runtime exposed it. */
export const dicomParser = ((ns as unknown as { default?: typeof ns }).default ?? ns) as typeof ns;
export type { ByteArray, DataSet, Element } from 'dicom-parser';
