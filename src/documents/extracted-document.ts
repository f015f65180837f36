/** Text pulled out of an uploaded file, ready for chunking. */
export interface ExtractedPage {
  /** 1-based page number for paged formats (PDF); null otherwise. */
  page: number | null;
  /**
   * Plain text. Headings as Markdown ATX lines (`# Title`, `## Section`), paragraphs separated
   * by a blank line, so that the chunker can split on structure.
   */
  text: string;
}

export type DocumentKind = 'pdf' | 'text' | 'markdown' | 'html' | 'docx';

export interface ExtractedDocument {
  kind: DocumentKind;
  pages: ExtractedPage[];
  /** 1-based numbers of the pages whose text came from OCR. */
  ocrPages: number[];
}

/** What the ingestion edge hands to the document store. */
export interface IngestInput {
  source: string;
  filename: string;
  /** The detected media type, e.g. `application/pdf`. */
  contentType: string;
  bytes: number;
  document: ExtractedDocument;
}
