/**
 * Why a file's text could not be had, with a message for the person who uploaded it. Thrown
 * inside the extraction process and carried to the service as `{code, message}`; the service
 * turns it into an AppError (415 for `unsupported`, 422 otherwise).
 */
export type ExtractionFailureCode =
  | 'unsupported'
  | 'empty'
  | 'no_text'
  | 'password_required'
  | 'password_wrong'
  | 'corrupt'
  | 'ocr_unavailable'
  | 'too_slow'
  | 'too_large';

export class ExtractionFailure extends Error {
  readonly code: ExtractionFailureCode;

  constructor(code: ExtractionFailureCode, message: string) {
    super(message);
    this.name = 'ExtractionFailure';
    this.code = code;
  }
}
